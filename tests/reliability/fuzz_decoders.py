"""Coverage-guided fuzzing (atheris/libFuzzer) of the frame splitter and every request
decoder: any exception but ``DecodeError`` is a finding.

    python -m tests.reliability.fuzz_decoders -runs=100000 -max_len=1024
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from protocol.errors import DecodeError
    from protocol.frames import FrameSplitter, decode_request


def one_input(data: bytes) -> None:
    # The first byte picks how the stream is chunked, like reads off a socket.
    if not data:
        return
    chunk = data[0] % 64 + 1
    splitter = FrameSplitter(4096)
    try:
        for i in range(1, len(data), chunk):
            for frame in splitter.feed(data[i : i + chunk]):
                try:
                    decode_request(frame)
                except DecodeError:
                    pass
    except DecodeError:
        pass
    # And the whole input as one frame, so every API's body decoder is reached directly.
    try:
        decode_request(data[1:])
    except DecodeError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
