"""The core commands against a persistent store, run as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from service import Substrate, SubstrateItem
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


def test_long_commands_show_each_step_and_its_count(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    s = Substrate(root=root)
    s.put_many(SubstrateItem(kind="text", text=f"note {n}") for n in range(120))
    s.close()
    assert main(["export", str(tmp_path / "out"), "--root", root]) == 0
    assert "writing items.jsonl: 120 of 120" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "out"), "--root", str(tmp_path / "copy")]) == 0
    err = capsys.readouterr().err
    for step in ("reading items.jsonl: 120", "checking every item: 120", "writing the events: 120"):
        assert step in err
    assert main(["verify", "--root", root]) == 0
    err = capsys.readouterr().err
    assert "walking the chain and every content address: 120 of 120" in err
    assert "replaying the log into a shadow schema: 120 of 120" in err
    assert "building the shadow search postings" in err and "digesting the shadow read models" in err
    assert main(["verify", "--root", root, "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["ok"] and out.err == ""  # machine output: no progress lines


def test_a_reading_command_on_a_root_that_does_not_exist_refuses_and_makes_nothing(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("SUBSTRATE_DATABASE_URL", raising=False)
    missing = tmp_path / "typo"
    for argv in (["verify", "--json"], ["search", "x"], ["events"], ["export", str(tmp_path / "out")], ["stats"]):
        assert main([*argv, "--root", str(missing)]) == 2, argv
        err = capsys.readouterr().err
        assert f"there is no store at {missing}" in err and "substrate db upgrade --root" in err
        assert not missing.exists()  # nothing was made
    monkeypatch.chdir(tmp_path)  # run from another directory, with no --root: the default ./.substrate
    assert main(["verify"]) == 2 and not (tmp_path / ".substrate").exists()
    capsys.readouterr()
    assert main(["db", "upgrade", "--root", str(missing)]) == 0  # a writing command makes its store
    out = capsys.readouterr().out
    # the whole URL, scheme and user included, as psql takes it
    assert "schema is at head on postgresql://postgres@/substrate?host=" in out
    assert main(["verify", "--root", str(missing), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chain"]["events"] == 0


def test_events_json_is_one_object_per_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    s = Substrate(root=root)
    a = s.add("text", "alpha\nwith a newline")
    s.update(a, tags=["t"])
    s.close()
    assert main(["events", "--root", root, "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["ItemPut", "ItemUpdated"]


def test_token_list_has_a_header_row(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    assert main(["token", "create", "--principal", "pharma", "--label", "ci", "--root", root]) == 0
    token_id = capsys.readouterr().out.split()[2]
    assert main(["token", "list", "--root", root]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "PRINCIPAL", "CREATED", "STATE", "LABEL"]
    assert row.split()[0] == token_id and row.split()[1] == "pharma" and row.split()[-2:] == ["live", "ci"]
    assert header.index("PRINCIPAL") == row.index("pharma")  # the columns line up


def test_search_events_and_export_read_as_of_a_position(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "store")
    s = Substrate(root=root)
    a = s.add("text", "the river floods in spring")
    then = s.position
    s.update(a, text="the lake freezes in winter")
    s.add("text", "the river floods again")
    s.close()
    assert main(["search", "river", "--root", root, "--json", "--as-of", str(then)]) == 0
    assert [h["item"]["text"] for h in json.loads(capsys.readouterr().out)] == ["the river floods in spring"]
    assert main(["events", "--root", root, "--json", "--as-of", str(then)]) == 0
    assert [json.loads(line)["seq"] for line in capsys.readouterr().out.splitlines()] == [then]
    assert main(["export", str(tmp_path / "then"), "--root", root, "--as-of", str(then)]) == 0
    assert "exported 1 items" in capsys.readouterr().out
    rows = (tmp_path / "then" / "items.jsonl").read_text().splitlines()
    assert [json.loads(r)["text"] for r in rows] == ["the river floods in spring"]
    assert main(["events", "--root", root, "--as-of", "99"]) == 2  # past the head: a clean error, no traceback
    assert "between 0 and the log head" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse refuses it, with the usage line
        main(["events", "--root", root, "--as-of", "yesterday"])
    assert refused.value.code == 2 and "ISO-8601" in capsys.readouterr().err
