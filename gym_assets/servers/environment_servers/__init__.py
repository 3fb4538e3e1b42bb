"""Environment servers: each directory may ship a ``task_data.py`` for its task input."""
