"""transcriber_adapters: one module or package per technology, each implementing core ports.

Adapters import ``transcriber_core`` and never ``transcriber_app``.
"""
