"""notebooks/explore.ipynb runs top to bottom, headless, on this venv's interpreter: its
Avro section (written by the sink through the schema registry, read with valueFormat=avro)
and its live lag chart (connector.progress.LagListener, redrawn per progress) included."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def _kernel_for_this_python(tmp_path: Path) -> None:
    """A "python3" kernelspec that starts sys.executable (a fresh venv may have none)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (pyq venv)", "language": "python"}))
    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == sys.executable


def test_explore_notebook_runs_headless(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    _kernel_for_this_python(tmp_path)
    nb = nbformat.read(ROOT / "notebooks" / "explore.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plot, inline

    def tagged(tag: str) -> list:
        (cell,) = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
        return cell.outputs

    def text(outs: list) -> str:
        return "".join(o.get("text", "") for o in outs if o.output_type == "stream")

    assert '"name":"Click"' in text(tagged("avro-write")).replace(" ", "")  # registered
    assert any("image/png" in o.get("data", {}) for o in tagged("avro-read"))
    live = tagged("live-lag")
    # the chart was displayed once and updated in place: one image, holding the last draw
    assert [o.output_type for o in live if "image/png" in o.get("data", {})] == ["display_data"]
    points = re.search(r"lag chart: (\d+) points, offsets behind latest \(max\) (\d+) -> (\d+)",
                       text(live))
    assert points, text(live)
    n, first, last = (int(g) for g in points.groups())
    assert n >= 3 and first > 0 and last == 0  # the lag went down to 0, batch by batch
