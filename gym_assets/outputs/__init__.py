"""Outputs the project may write, replace or delete: only its own, one writer at a time.

Every product (a taskset, a plan, a rollouts run, a conformance report, ...) is either a
directory holding the marker ``.gym-assets-product.json`` or a single file with a marker
beside it (``.<name>.gym-assets.json``, listing the sha256 of the bytes written) or inside
it. A path is written only when it is missing, empty, or already holds this kind of product;
anything else is refused with one line. Every writer holds an exclusive lock on its output,
and a filesystem failure is reported as a one-line ``OutputError`` naming the output.

    targets.py   what an output is: its path, its kind, the roots it must respect
    markers.py   product kinds and the markers that say "written by gym-assets"
    paths.py     where an output may not be: links, devices, the configs root
    lock.py      one writer per output
    claims.py    claim a directory, swap a rebuilt one in, write a single-file product
"""
