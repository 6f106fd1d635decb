"""Where textclf keeps its files."""

from __future__ import annotations

from textclf import paths


def test_the_data_dir_is_textclf_home_then_xdg_then_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("TEXTCLF_HOME", str(tmp_path / "home"))
    assert paths.data_dir() == tmp_path / "home"
    monkeypatch.delenv("TEXTCLF_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert paths.data_dir() == tmp_path / "xdg" / "textclf"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert paths.data_dir() == tmp_path / "user" / ".local" / "share" / "textclf"


def test_the_compilation_cache_is_the_one_jax_was_told_of_else_the_users_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("TEXTCLF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "chosen"))
    assert paths.compile_cache_dir() == tmp_path / "chosen"
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert paths.compile_cache_dir() == tmp_path / "cache" / "textclf" / "jax"  # shared by every data dir
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert paths.compile_cache_dir() == tmp_path / "user" / ".cache" / "textclf" / "jax"
    assert paths.vector_cache_dir() == tmp_path / "home" / "vector-cache"
