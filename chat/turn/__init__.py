"""A chat turn."""
