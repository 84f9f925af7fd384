"""Tests through the real service process: HTTP API, lifecycle and acceptance scenarios."""
