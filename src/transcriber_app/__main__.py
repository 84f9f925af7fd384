"""``python -m transcriber_app`` is the ``transcriber`` command."""

import sys

from transcriber_app.cli import main

sys.exit(main())
