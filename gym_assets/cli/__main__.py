"""``python -m gym_assets.cli``: the same as the ``gym-assets`` command."""

import sys

from gym_assets.cli import main

sys.exit(main())
