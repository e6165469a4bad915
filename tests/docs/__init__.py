"""Tests of the documentation site: tutorials run, the build is warning-free, pages render."""
