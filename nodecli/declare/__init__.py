"""Declare it once: the desired-state document, diff, plan and apply (export/diff/apply)."""
