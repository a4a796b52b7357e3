"""Make edgert programs: from a PyTorch model (``from_torch``), or node by node
(``ProgramBuilder``), and read and write their bytes (docs/program-format.md).

``read_program`` turns bytes into a ``ProgramDef`` that passes (for example a quantization
pass) can rewrite and ``write_program`` serializes again. Only ``from_torch`` needs torch
(``pip install edgert[torch]``), and it imports it when called; the rest is pure Python and
numpy and needs no native extension (edgert/program_format.py holds it).
"""

from __future__ import annotations

from edgert._errors import ExportError, InvalidProgramError, UnsupportedOperatorError
from edgert.program_format import (
    CHECKSUM_OFFSET,
    CONSTANT_ALIGNMENT,
    DTYPE_CODES,
    DTYPE_NAMES,
    MAGIC,
    VERSION,
    NodeDef,
    ProgramBuilder,
    ProgramDef,
    ValueDef,
    dtype_name,
    program_checksum,
    read_program,
    save_program,
    seal_program,
    write_program,
)

__all__ = ["CHECKSUM_OFFSET", "CONSTANT_ALIGNMENT", "DTYPE_CODES", "DTYPE_NAMES", "MAGIC",
           "VERSION", "ValueDef", "NodeDef", "ProgramDef", "ProgramBuilder",
           "dtype_name", "write_program", "read_program", "program_checksum", "seal_program",
           "save_program", "from_torch", "ExportError", "InvalidProgramError",
           "UnsupportedOperatorError"]


def from_torch(model: object, args: object = None, *, dynamic_shapes: object = None,
               check: bool = True) -> bytes:
    """An edgert program computing what a PyTorch model computes.

    ``model`` is a ``torch.nn.Module`` with example ``args`` (a tuple of tensors; the module
    is put in eval mode and exported with ``torch.export.export`` without gradients) or a
    ``torch.export.ExportedProgram``. ``dynamic_shapes`` is passed to ``torch.export`` (e.g.
    ``{"x": {0: torch.export.Dim("batch")}}``): those dimensions are -1 in the program.
    The program's inputs are the model's tensor inputs and its outputs the model's tensor
    outputs, in the order torch.export flattens them; its constants are the parameters and
    buffers the model reads (batch norm folded into the convolution before it).

    With ``check`` (the default) the program is run on the example inputs and compared with
    eager PyTorch (rtol 1e-3); a difference raises ``ExportError``. An operator edgert has no
    equivalent for raises ``UnsupportedOperatorError`` naming it and the module it came
    from, before anything is returned. Needs torch (``pip install edgert[torch]``)."""
    try:
        from edgert._torch import from_torch as convert
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != "torch":
            raise
        raise ExportError("from_torch needs PyTorch, which is not installed "
                          "(fix: pip install edgert[torch])") from None
    return convert(model, args, dynamic_shapes=dynamic_shapes, check=check)  # type: ignore[arg-type]
