"""A PyTorch checkpoint read without torch: a zip of pickled storages, into numpy arrays.

``torch.save`` writes a zip whose ``*/data.pkl`` pickles the state dict with
each tensor as ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, …)`` and each storage as a persistent id naming a raw little-endian
file ``*/data/<key>``. The unpickler here resolves only those few globals,
to numpy; any other global (code a crafted checkpoint could smuggle in) is
refused, so reading a file runs nothing of it.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class CheckpointError(ValueError):
    """The file is not a state dict of tensors this reader knows."""


#: The storage classes a state dict uses, and their numpy types.
_STORAGES = {
    "FloatStorage": "<f4",
    "DoubleStorage": "<f8",
    "HalfStorage": "<f2",
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


class _Storage:
    """A storage class named in the pickle, standing for its numpy type."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


def _rebuild_tensor(
    storage: npt.NDArray[Any],
    offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
    *_rest: object,
) -> npt.NDArray[Any]:
    """``torch._utils._rebuild_tensor_v2``: a view of ``storage`` with that shape and strides."""
    import numpy as np  # noqa: PLC0415

    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=size, strides=tuple(s * item for s in stride)
    )
    return np.array(view)  # a copy: the storage may be shared, the result is owned


def _ordered_dict(*_args: object) -> collections.OrderedDict[str, Any]:
    return collections.OrderedDict()


class _Unpickler(pickle.Unpickler):
    """Resolves the state dict's few globals to numpy, refuses everything else."""

    def __init__(self, file: IO[bytes], archive: zipfile.ZipFile, root: str) -> None:
        super().__init__(file)
        self.archive = archive
        self.root = root
        self.storages: dict[str, npt.NDArray[Any]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _STORAGES:
            return _Storage(_STORAGES[name])
        if module == "collections" and name == "OrderedDict":
            return _ordered_dict
        raise CheckpointError(f"the checkpoint names {module}.{name}, which is not read")

    def persistent_load(self, pid: Any) -> Any:
        import numpy as np  # noqa: PLC0415

        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise CheckpointError("the checkpoint has a storage of an unknown kind")
        _, kind, key, _location, count = pid
        if not isinstance(kind, _Storage):
            raise CheckpointError("the checkpoint has a storage of an unknown type")
        if key not in self.storages:
            data = self.archive.read(f"{self.root}/data/{key}")
            self.storages[key] = np.frombuffer(data, dtype=kind.dtype, count=count)
        return self.storages[key]


def read_state_dict(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The tensors of the state dict saved at ``path``, by name, as numpy arrays."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")]
            if len(pickles) != 1:
                raise CheckpointError("the file has no single data.pkl")
            root = pickles[0].rsplit("/", 1)[0]
            with archive.open(pickles[0]) as file:
                loaded = _Unpickler(file, archive, root).load()
    except (zipfile.BadZipFile, pickle.UnpicklingError, KeyError, EOFError) as exc:
        raise CheckpointError(f"the checkpoint cannot be read ({type(exc).__name__})") from None
    if not isinstance(loaded, dict):
        raise CheckpointError("the checkpoint is not a state dict")
    return dict(loaded)
