"""Maintenance tools (not used at run time)."""
