"""Prepared benchmark data and collated tasksets, one partition per benchmark; every dataset
of the configs collated per mode."""
