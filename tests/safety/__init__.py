"""Hostile or careless input: one file per class of defect."""
