"""The scoreboard asset and the sensor that keeps it following the rollouts."""
