import json
import subprocess
import sys

from nmt.scoring import compare, format_table, score

HYPS = ["the cat sat on the mat.", "a dog runs in the park", "hello world"]
REFS = ["the cat sat on a mat.", "a dog is running in the park.", "hello , world"]


def test_scores_equal_the_sacrebleu_command(tmp_path):
    (tmp_path / "hyp").write_text("\n".join(HYPS) + "\n")
    (tmp_path / "ref").write_text("\n".join(REFS) + "\n")
    command = [
        sys.executable,
        "-m",
        "sacrebleu",
        str(tmp_path / "ref"),
        "-i",
        str(tmp_path / "hyp"),
        "-m",
        "bleu",
        "chrf",
        "ter",
    ]
    reference = json.loads(
        subprocess.run(command, capture_output=True, text=True, check=True).stdout
    )
    ours = score(HYPS, REFS)
    assert ours.bleu == reference[0]["score"]
    assert ours.chrf == reference[1]["score"]
    assert ours.ter == reference[2]["score"]
    assert ours.bleu_signature == reference[0]["signature"]
    assert ours.chrf_signature == reference[1]["signature"]
    assert ours.ter_signature == reference[2]["signature"]


def test_a_comparison_tests_ter_like_the_others():
    rows, signatures = compare([("a", HYPS), ("b", REFS)], REFS, samples=200)
    assert [row.ter for row in rows] == [score(HYPS, REFS).ter, 0.0]
    assert rows[0].ter_p is None and 0 <= rows[1].ter_p <= 1
    assert signatures["TER"].startswith("nrefs:1|bs:200")
    table = format_table(rows, signatures).splitlines()
    assert table[0].split()[-2:] == ["TER", "p(TER)"] and "TER: lower is better" in table[3]


def test_perfect_translation_scores_100():
    assert score(REFS, REFS).bleu == 100.0
