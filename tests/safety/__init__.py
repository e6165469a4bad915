"""Acceptance tests of issue 13, one file per class of hostile or careless input."""
