"""The program of the test npm package, under an npm prefix."""

from gym_assets_tests.rollouts.harnesses.install.install_adapter import ProgramOnly
from gym_assets_tests.rollouts.harnesses.install.packages import PROGRAM

ADAPTER = ProgramOnly("npmfake", f"node_modules/.bin/{PROGRAM}")
