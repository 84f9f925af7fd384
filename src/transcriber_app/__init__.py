"""transcriber_app: composition — config, the server, the bot, the CLI.

The only place that knows which adapters exist.
"""
