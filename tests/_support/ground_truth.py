"""lfx's own verdicts from a separate interpreter, computed in the background.

The ground-truth tests compare what the sandbox says with what lfx says in a process of its
own (lfx never enters the test process for them, as it never enters a user's kernel). Both
halves take seconds to tens of seconds -- importing lfx, building every component -- and
neither needs the other until the comparison: a test starts the ground truth, asks the sandbox
meanwhile, then reads the answer. On two cores the halves overlap instead of adding up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any


class Background:
    """``python -c script *args`` started now; ``result()`` waits for the JSON its last line prints."""

    def __init__(self, script: str, *args: str, stdin: str | None = None, timeout: float = 600) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._out = ("", "")
        self._timed_out = False
        # communicate() on a thread: it feeds stdin and drains both pipes while the test works.
        self._thread = threading.Thread(target=self._communicate, args=(stdin, timeout), daemon=True)
        self._thread.start()
        self._value: Any = None

    def _communicate(self, stdin: str | None, timeout: float) -> None:
        try:
            self._out = self._proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            self._timed_out = True
            self._proc.kill()
            self._out = self._proc.communicate()

    def result(self) -> Any:
        """The parsed JSON of the script's last line of output (an assertion error if it failed)."""
        self._thread.join()
        if self._value is None:
            out, err = self._out
            assert not self._timed_out, f"the ground truth timed out: {err[-2000:]}"
            assert self._proc.returncode == 0, err[-2000:]
            self._value = json.loads(out.strip().splitlines()[-1])
        return self._value

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._thread.join()
