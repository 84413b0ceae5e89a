"""`trident-spark --help` and each subcommand's help show worked examples."""

from __future__ import annotations

import pytest

from trident_spark.cli.main import SUBCOMMANDS, build_parser, main


def help_text(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_has_examples(capsys):
    out = help_text(["--help"], capsys)
    assert out.startswith("usage: trident-spark")
    assert "Storm Trident topologies on Spark Structured Streaming." in out
    assert "\nexamples:\n" in out
    assert "trident-spark run examples/wordcount.py" in out
    assert "trident-spark demo" in out


@pytest.mark.parametrize("command", ["run", "demo", "query", "status", "tune", "drpc", "drpc-server"])
def test_subcommand_help_has_examples(command, capsys):
    out = help_text([command, "--help"], capsys)
    assert out.startswith(f"usage: trident-spark {command}")
    assert "\nexamples:\n" in out
    # the examples section is shown as written (RawDescriptionHelpFormatter), one per line
    examples = out.split("\nexamples:\n", 1)[1]
    assert examples.count(f"trident-spark {command}") >= 2


def test_every_registered_subcommand_is_listed(capsys):
    out = help_text(["--help"], capsys)
    for module in SUBCOMMANDS:
        name = module.__name__.rsplit(".", 1)[-1].replace("_", "-")  # drpc_server: drpc-server
        assert f"\n    {name} " in out or f"\n    {name}\n" in out  # a long name has its own line
        # argparse wraps the help text: compare it word by word
        assert " ".join(module.HELP.split()[:4]) in " ".join(out.split())


def test_run_help_lists_its_options(capsys):
    out = help_text(["run", "--help"], capsys)
    for option in ("FILE[:ATTR]", "--checkpoint", "--trigger", "--available-now", "--master", "--retries",
                   "--explain"):
        assert option in out


def test_query_help_explains_keys_and_lists_its_options(capsys):
    out = help_text(["query", "--help"], capsys)
    for option in ("STATE_URL", "KEY", "--global", "--json-keys", "--format {table,json}"):
        assert option in out
    assert "  cat,en           a compound key (two group fields): \"cat\" and \"en\"\n" in out
    assert "Keys compare as Python values do: 1, 1.0 and true are one key, \"1\" is another;" in out
    assert "'[{\"~tuple\": [1, 2]}]' is the tuple (1, 2)" in out


def test_no_command_prints_help_and_returns_2(capsys):
    assert main([]) == 2
    assert "examples:" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["launch"])
    assert info.value.code == 2
    assert "invalid choice: 'launch'" in capsys.readouterr().err


def test_run_parses_its_options():
    args = build_parser().parse_args(["run", "app.py:build", "--available-now", "--checkpoint", "/tmp/c",
                                      "--trigger", "500 milliseconds", "--master", "local[2]"])
    assert (args.target, args.available_now, args.checkpoint, args.trigger, args.master) == (
        "app.py:build", True, "/tmp/c", "500 milliseconds", "local[2]")
    defaults = build_parser().parse_args(["run", "app.py"])
    assert (defaults.trigger, defaults.available_now, defaults.checkpoint) == ("1 second", False, None)


def test_demo_defaults():
    args = build_parser().parse_args(["demo"])
    assert (args.sentences, args.partitions, args.max_fetch_bytes, args.top) == (5000, 4, 25_000, 10)


def test_handler_return_code_and_ctrl_c(monkeypatch):
    from trident_spark.cli import demo

    # handlers are bound when the parser is built: replace the demo before that
    monkeypatch.setattr(demo, "main", lambda args: 3)
    assert main(["demo"]) == 3

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "main", interrupted)
    assert main(["demo", "--sentences", "1"]) == 130
