"""coteam.llm prompts, configuration and token estimates."""

from __future__ import annotations

import sys

import pytest

from coteam.llm import LLMConfig, PromptLibrary, accounting, estimate_messages_tokens, estimate_tokens, tokenizer_name
from coteam.llm.prompts import parse_template


@pytest.fixture
def library(tmp_path):
    (tmp_path / "plan.md").write_text(
        "Maintainer notes: slots are {{ignored}} here.\n"
        "---system---\n"
        'You are {{agent}}, a robot. Reply as JSON like {"action": 3, "why": {"short": true}}.\n'
        "---user---\n"
        "Goal: {{goal}}\n"
        "Options:\n{{ options }}\n"
    )
    (tmp_path / "plain.md").write_text("Be brief.\n---user---\nHi {{name}}\n")
    (tmp_path / "user_only.md").write_text("---user---\n{{text}}")
    (tmp_path / "notes.txt").write_text("not a template")
    return PromptLibrary(tmp_path)


def test_render_fills_slots_and_keeps_json_braces(library):
    msgs = library.render("plan", agent="alice", goal="fridge: 2 apples", options="A. walk\nB. grab")
    assert msgs == [
        {
            "role": "system",
            "content": 'You are alice, a robot. Reply as JSON like {"action": 3, "why": {"short": true}}.',
        },
        {"role": "user", "content": "Goal: fridge: 2 apples\nOptions:\nA. walk\nB. grab"},
    ]
    assert library.slots("plan") == {"agent", "goal", "options"}  # the preamble is not part of the template


def test_render_is_one_pass_and_formats_numbers(library):
    msgs = library.render("plain", name="{{name}} {x}")
    assert msgs == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{name}} {x}"}]
    assert library.render("user_only", text=42) == [{"role": "user", "content": "42"}]


def test_missing_and_unknown_slots_raise_key_error_naming_them(library):
    with pytest.raises(KeyError, match=r"missing slot.*goal"):
        library.render("plan", agent="a", options="o")
    with pytest.raises(KeyError, match=r"unknown slot.*colour"):
        library.render("plain", name="n", colour="red")
    with pytest.raises(TypeError, match="slot 'name'"):
        library.render("plain", name=["not", "text"])


def test_names_and_unknown_template(library):
    assert library.names() == ["plain", "plan", "user_only"]
    with pytest.raises(KeyError, match=r"unknown prompt template 'nope'.*plain, plan, user_only"):
        library.render("nope")
    with pytest.raises(FileNotFoundError):
        PromptLibrary(library.package_dir / "missing")


def test_malformed_templates_are_rejected():
    with pytest.raises(ValueError, match="---user---"):
        parse_template("t", "no user part")
    with pytest.raises(ValueError, match="---user---"):
        parse_template("t", "---user---\na\n---user---\nb")
    with pytest.raises(ValueError, match="---system---"):
        parse_template("t", "---user---\na\n---system---\nb")


def test_package_prompts_are_shipped():
    lib = PromptLibrary()
    assert "example_echo" in lib.names()
    msgs = lib.render("example_echo", agent="bob", question="ready?")
    assert msgs[-1] == {"role": "user", "content": "Question from bob: ready?"}
    assert '{"answer": "..."}' in msgs[0]["content"]


def test_config_from_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("COTEAM_LLM_MODEL", "qwen2.5-7b-instruct")
    c = LLMConfig.from_env()
    assert (c.model, c.base_url, c.api_key) == ("qwen2.5-7b-instruct", "http://127.0.0.1:8000/v1", "sk-test")
    assert (c.temperature, c.top_p, c.max_tokens, c.max_retries) == (0.0, 1.0, 1024, 3)
    o = LLMConfig.from_env(model="gpt-4o", temperature=0.7, base_url=None, api_key=None, max_retries=None)
    assert (o.model, o.temperature, o.base_url, o.api_key, o.max_retries) == (
        "gpt-4o",
        0.7,
        "http://127.0.0.1:8000/v1",
        "sk-test",
        3,
    )
    with pytest.raises(TypeError, match="colour"):
        LLMConfig.from_env(colour="red")


def test_config_defaults_and_checks(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COTEAM_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    c = LLMConfig.from_env()
    assert (c.model, c.base_url, c.api_key) == ("gpt-4o-mini", None, None)
    assert "sk-" not in c.describe() and "default OpenAI endpoint" in c.describe()
    monkeypatch.setenv("COTEAM_LLM_MODEL", "")
    assert LLMConfig.from_env().model == "gpt-4o-mini"
    with pytest.raises(ValueError):
        LLMConfig("m", None, None, temperature=-1)
    with pytest.raises(ValueError):
        LLMConfig("m", None, None, max_retries=-1)


@pytest.fixture
def fresh_tokenizer():
    accounting._tokenizer.cache_clear()
    yield
    accounting._tokenizer.cache_clear()


def test_estimate_tokens_with_the_offline_tokenizer(fresh_tokenizer):
    import bpe_openai  # noqa: F401  (a declared dependency: its tables must load offline)

    assert tokenizer_name() == "bpe-openai o200k_base"
    assert estimate_tokens("Hello, world!") == 4  # o200k_base: "Hello" "," " world" "!"
    assert estimate_tokens("") == 0
    assert estimate_tokens("<|endoftext|>") > 1  # special tokens are counted as plain text, never rejected
    long = "put the apple in the fridge. " * 10_000
    assert abs(estimate_tokens(long) - 7 * 10_000) < 100


def test_estimate_tokens_falls_back_to_the_heuristic(monkeypatch, fresh_tokenizer):
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # "not installed"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    assert tokenizer_name().startswith("heuristic")
    assert (estimate_tokens(""), estimate_tokens("abcd"), estimate_tokens("abcdefghi")) == (0, 1, 3)
    msgs = [{"role": "user", "content": "abcdefgh"}]
    assert estimate_messages_tokens(msgs) == 2 + 3 + 3


def test_heuristic_can_be_forced(monkeypatch, fresh_tokenizer):
    monkeypatch.setenv("COTEAM_TOKENIZER", "heuristic")
    assert tokenizer_name().startswith("heuristic") and estimate_tokens("x" * 40) == 10
