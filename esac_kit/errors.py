"""The errors a user can cause or meet, each with its own exit code and a one-line message."""


class EsacError(Exception):
    """Base of every error the CLI turns into a one-line message; exit_code says which kind it was."""

    exit_code = 1


class ConfigError(EsacError):
    """Bad input that retrying cannot fix: a malformed item file, a drifted manifest, a wrong key, a missing pack."""

    exit_code = 2


class InfrastructureAbort(EsacError):
    """An infrastructure failure persisted past the retry policy: the run stops and keeps what it finished (amendment 001 §8)."""

    exit_code = 3

    def __init__(self, message: str, retries=None):
        super().__init__(message)
        self.retries = retries or {}  # the aborting call's retries by kind, so the report can still count them


class VerificationFailed(EsacError):
    """`esac-kit verify` found an item that breaks one of its guarantees."""

    exit_code = 1


class RunStopped(EsacError):
    """A run was stopped on request (a notebook's Stop): what finished is journalled and the folder is unlocked."""

    exit_code = 130
