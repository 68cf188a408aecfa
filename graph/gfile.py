"""`tf.gfile`: TF1's file functions, on the local file system (`gs://`, `hdfs://` and other
remote schemes are not supported: a ValueError names the path).

>>> import os, tempfile
>>> from dualgrad.graph import gfile
>>> d = os.path.join(tempfile.mkdtemp(), "a", "b")
>>> gfile.MakeDirs(d); gfile.Exists(d)
True
>>> with gfile.GFile(os.path.join(d, "x.txt"), "w") as f:
...     _ = f.write("hello\\n")
>>> gfile.Glob(os.path.join(d, "*.txt")) == [os.path.join(d, "x.txt")]
True
"""
from __future__ import annotations

import glob as _glob
import os
import shutil

__all__ = ["GFile", "FastGFile", "Open", "Exists", "MakeDirs", "Mkdir", "Glob", "IsDirectory",
           "ListDirectory", "Remove", "Rename", "Copy", "DeleteRecursively", "Walk", "Stat"]


def _local(path):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    if "://" in path and not path.startswith("file://"):
        raise ValueError(f"gfile: {path!r} is not a local path; dualgrad's gfile reads and "
                         "writes the local file system only")
    return path[len("file://"):] if path.startswith("file://") else path


class GFile:
    """A file, as TF's GFile: `read(n=-1)`, `readline()`, `readlines()`, `write(s)`,
    `size()`, iteration over lines, a context manager; text or bytes by `mode`."""

    def __init__(self, name, mode="r"):
        self.name, self.mode = _local(name), mode
        self._f = open(self.name, mode)

    def read(self, n=-1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, data):
        return self._f.write(data)

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()

    def seek(self, offset, whence=0):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def size(self):
        return os.path.getsize(self.name)

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


FastGFile = Open = GFile


def Exists(filename):  # noqa: N802 - TF's names
    return os.path.exists(_local(filename))


def MakeDirs(dirname):  # noqa: N802
    os.makedirs(_local(dirname), exist_ok=True)


def Mkdir(dirname):  # noqa: N802
    os.mkdir(_local(dirname))


def Glob(filename):  # noqa: N802
    return sorted(_glob.glob(_local(filename)))


def IsDirectory(dirname):  # noqa: N802
    return os.path.isdir(_local(dirname))


def ListDirectory(dirname):  # noqa: N802
    return os.listdir(_local(dirname))


def Remove(filename):  # noqa: N802
    os.remove(_local(filename))


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    if not overwrite and os.path.exists(_local(newname)):
        raise FileExistsError(f"gfile.Rename: {newname} exists (pass overwrite=True)")
    os.replace(_local(oldname), _local(newname))


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    if not overwrite and os.path.exists(_local(newpath)):
        raise FileExistsError(f"gfile.Copy: {newpath} exists (pass overwrite=True)")
    shutil.copyfile(_local(oldpath), _local(newpath))


def DeleteRecursively(dirname):  # noqa: N802
    shutil.rmtree(_local(dirname))


def Walk(top, in_order=True):  # noqa: N802
    yield from os.walk(_local(top), topdown=in_order)


def Stat(filename):  # noqa: N802
    return os.stat(_local(filename))
