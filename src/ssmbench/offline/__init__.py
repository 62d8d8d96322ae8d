"""Runs on compute nodes without network: what ``ssmbench offline`` does.

* ``pack`` (``pack.py``), on a machine with network: one bundle with the wheels of the
  packages the project needs, at the versions installed there (``wheels.py``), and the
  suite's datasets as the node's fetch reads them, compressed, with their checksums;
* ``unpack`` (``unpack.py``), on the node: the bundle checked, the wheels installed with no
  index, the data put where the suite's fetch reads them, each dataset fetched and prepared
  without network;
* ``records`` and ``merge`` (``records.py``): the node's finished runs packed, and added to
  the project's ``paths.runs`` without ever replacing a finished record that differs.

Every archive is ``archive.py``'s: a plain tar whose first member, ``SHA256SUMS``, lists the
sha256 of every other, read back only into a staging folder and refused whole for a member
that is a link, leads out of its folder, or is not the one listed. The node's steps (the
bundle read, the wheels installed, the data put in place) import the standard library
alone, since they run before anything else is installed.
"""
