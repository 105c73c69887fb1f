"""The core commands against a persistent store, run as a user would."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from service import Substrate
from service.cli import main


def test_export_import_verify_replay_events(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    s = Substrate(root=root)
    a = s.add("text", "alpha")
    s.add("record", payload={"b": 1})
    s.close()
    assert main(["export", str(tmp_path / "out"), "--root", root]) == 0
    assert "exported 2 items" in capsys.readouterr().out
    assert main(["verify", "--root", root, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["chain"]["events"] == 2
    assert main(["replay", "--root", root]) == 0
    out = capsys.readouterr()
    assert "replayed 2 events" in out.out
    # the phases that report no count of their own still say what is happening
    assert "building the search postings" in out.err and "digesting every read model" in out.err
    assert main(["events", "--root", root, "--type", "ItemPut"]) == 0
    assert capsys.readouterr().out.count("ItemPut") == 2
    assert main(["import", str(tmp_path / "out"), "--root", root]) == 0
    s = Substrate(root=root)
    assert s.get(a) is not None and len(s) == 2
    s.close()


def test_verify_exits_1_naming_the_first_bad_seq(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    s = Substrate(root=root)
    for n in range(3):
        s.add("text", f"t{n}")
    with s.engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        c.execute(text("UPDATE events SET principal = 'mallory' WHERE seq = 2"))
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))
    s.close()
    assert main(["verify", "--root", root]) == 1
    assert "BROKEN at seq 2" in capsys.readouterr().out


def test_import_of_a_bad_file_is_a_clean_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "items.jsonl").write_text("{oops\n")
    assert main(["import", str(tmp_path), "--root", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert "items.jsonl:1" in err and "Traceback" not in err
