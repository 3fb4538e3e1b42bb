"""Prepared benchmark data and collated tasksets, one partition per benchmark."""
