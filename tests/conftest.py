"""Fixtures shared by the sandbox tests."""

import socket

import pytest


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1; `accepted()` says whether anything connected to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.3)

    def accepted() -> bool:
        try:
            server.accept()[0].close()
            return True
        except OSError:
            return False

    yield server.getsockname()[1], accepted
    server.close()
