"""transcriber_contracts: the contract suite of each core port, importable by anyone.

Each module holds one ``...Contract`` class of pytest tests. Subclass it in
your test module and provide the one fixture its docstring names; your
adapter then runs the same checks as the adapters shipped with transcriber.
Depends on ``transcriber_core`` and pytest only.
"""
