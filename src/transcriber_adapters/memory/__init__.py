"""In-memory adapters of every port: first-class, for demos and tests.

Each passes the same contract suite as the real adapter of its port, and
offers ``reset()`` and a record of calls where a test needs to look.
"""
