"""The program of the test npm package, under an npm prefix."""

from gym_assets_tests.harness_install.install_adapter import ProgramOnly
from gym_assets_tests.harness_install.packages import PROGRAM

ADAPTER = ProgramOnly("npmfake", f"node_modules/.bin/{PROGRAM}")
