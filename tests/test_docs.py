"""Docs that run: every ```python block of README.md and docs/*.md, in order, per file, in one
fresh interpreter, as a reader pastes them one after another.

A block whose first line is `# excerpt` is a deliberate fragment and is not run. Each block
is compiled under the Markdown file's own name, padded so that its line numbers are the
file's: a failure reads `docs/tutorial.md, block 3 (line 120)` and its traceback points at
`docs/tutorial.md", line 123`.

    python tests/test_docs.py docs/tutorial.md      # run one file's blocks by hand
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
EXCERPT = "# excerpt"
TIMEOUT = 600


def blocks(path: Path) -> list[tuple[int, str]]:
    """(first line of the code, code) of each ```python block that is meant to run."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        code = m.group(1)
        if not code.lstrip().startswith(EXCERPT):
            out.append((text.count("\n", 0, m.start(1)) + 1, code))
    return out


def doc_files() -> list[Path]:
    return [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
            if blocks(p)]


def run_blocks(path: Path) -> int:
    """Run the blocks of `path` in order in this interpreter; on the first failure, print
    which file and block failed (and the traceback) to stderr and return 1."""
    ns = {"__name__": "__main__"}
    for k, (line, code) in enumerate(blocks(path), 1):
        try:
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), ns)
        except BaseException:  # noqa: BLE001 - report any failure as the block's
            rel = os.path.relpath(path, ROOT)
            print(f"{rel}, block {k} (line {line}) failed:\n{traceback.format_exc()}",
                  file=sys.stderr)
            return 1
    return 0


@pytest.mark.slow
@pytest.mark.parametrize("path", doc_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_python_blocks_run_in_order(path, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, __file__, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-6000:]


def test_an_excerpt_is_skipped_and_a_failure_names_file_block_and_line(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("intro\n```python\nx = 1\n```\n\n```python\n# excerpt\nundefined_a\n```\n"
                  "text\n```python\ny = x + 1\nundefined_b\n```\n")
    assert [line for line, _ in blocks(md)] == [3, 12]
    proc = subprocess.run([sys.executable, __file__, str(md)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "page.md, block 2 (line 12) failed" in proc.stderr
    assert f'File "{md}", line 13' in proc.stderr and "undefined_b" in proc.stderr


if __name__ == "__main__":
    sys.exit(max(run_blocks(Path(p).resolve()) for p in sys.argv[1:]))
