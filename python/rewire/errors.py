"""The exceptions rewire raises: one per kind of error its C++ library reports.

Every one is a ``rewire.Error``; each also derives from the built-in exception a Python user
would catch for that kind (``ValueError`` for an invalid argument, ``FileNotFoundError`` for
something missing), so ``except ValueError`` works as it does with other libraries.
"""


class Error(RuntimeError):
    """An error of rewire's library (the message says what to fix)."""


class InvalidArgumentError(Error, ValueError):
    """An argument, a model or a file rewire cannot take as given."""


class NotFoundError(Error, FileNotFoundError):
    """A file, a model, a search or a cost model that does not exist."""


class UnimplementedError(Error, NotImplementedError):
    """What this build or this model cannot do (an operator, a device)."""


class ResourceExhaustedError(Error):
    """A budget is spent (the measurements a cost model may make)."""


class DeadlineExceededError(Error, TimeoutError):
    """A wait ran out."""


class UnavailableError(Error, ConnectionError):
    """A runtime or a peer is gone or cannot be reached."""


class DataLossError(Error, OSError):
    """A file is damaged, truncated or could not be written."""
