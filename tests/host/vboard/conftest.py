import pytest

from surepick.host.vboard import VirtualBoard


@pytest.fixture
def board(flash):
    # A bare virtual board (no plant, nothing deployed) at its REPL, on the empty `flash` of
    # tests/host/conftest.py. A module that wants another board defines its own `board`.
    with VirtualBoard(flash) as b:
        b.wait_repl(20)
        yield b
