"""Resources servers: each directory may ship ``task_data.py`` and ``dataset_metrics.py``."""
