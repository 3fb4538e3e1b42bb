"""Read back the ``file://`` links the assets put in metadata (``page_link``)."""

from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import dagster as dg


def linked_file(value: dg.MetadataValue) -> Path:
    """The file a URL metadata entry links to; fails on any other kind of entry."""
    assert isinstance(value, dg.UrlMetadataValue), value
    url = urlparse(str(value.url))
    assert url.scheme == "file", value.url
    return Path(url2pathname(url.path))
