#!/usr/bin/env bash
# The Multi30k recipe: the best translation from its 29k training pairs alone, then one fast
# model with the ensemble's quality (sequence-level knowledge distillation, Kim & Rush 2016),
# in about two hours of one CPU's time per direction by default.
#
# 1. teachers: MODELS models of configs/multi30k_<src>_<tgt>_best.yaml, seeds 1..MODELS,
#    each an equal share of MINUTES of training;
# 2. ensemble: their best checkpoints' beam size and length penalty chosen on valid BLEU
#    (nmt eval's grid), then valid and test translated with them (test scored once);
# 3. distil: the ensemble translates the training sources with those settings (nmt distill);
# 4. students: each of STUDENTS trained STUDENT_MINUTES on each of STUDENT_DATA: "distilled"
#    (the distilled corpus alone) and "mixed" (the distilled pairs and the original ones,
#    data.extra_train; it needs --data), its beam and length penalty chosen on valid, scored
#    on test once. "base" has the teachers' shape, "shallow" 6 encoder layers and 1 decoder
#    layer (Kasai et al. 2021: search runs the decoder only);
# 5. export: each student to CTranslate2, scored on test with int8 weights;
# 6. speeds: beam-5 sentences/s on test of the teachers' ensemble and of each student (nmt
#    fp32, nmt int8, CTranslate2 int8), each at the length penalty chosen for it on valid,
#    whole `nmt translate` processes (scripts/bench_translate.py), one after another.
# Every score is printed with sacrebleu's signatures (BLEU, chrF, TER) on stdout, and the
# students' p-values against the ensemble; then each system's repetition rate (the share of
# its valid and test translations that repeat a word 4-gram) beside the ensemble's; progress
# and each stage's minutes go to stderr. Valid and test translations are kept
# (RUNS/ensemble.{valid,test}.<tgt>, RUNS/student_*/{valid,test}.<tgt>), so a later run can be
# tested against this one: nmt eval --hyp OLD --hyp NEW --ref REF.
# Run it again to resume: finished models, the grids and the distilled corpus are kept, an
# interrupted training or distillation goes on.
#
#   scripts/recipe_multi30k.sh de-en --data DIR           # 3 x 18 + 2 x 18 minutes of training
#   scripts/recipe_multi30k.sh en-de --data DIR           # {train,val,test_2016_flickr}.{de,en}
#   scripts/recipe_multi30k.sh de-en --minutes 8          # a quick check of the whole pipeline
#
# Options: --minutes M (the teachers' training minutes in all, default 54), --models N (the
# ensemble's size, default 3), --students "NAME ..." (default "base"; "base shallow" for
# both; "" for none), --student-data "NAME ..." (default "distilled mixed" with --data,
# "distilled" without), --student-minutes M (each student's, default 18; with --minutes
# under 30, a quarter of it), --data DIR (corpus files; default: the Hugging Face hub),
# --runs DIR (default runs/recipe_multi30k_<src>_<tgt>), --beams "K ..." and --alphas "A ..."
# (the grid tried on valid, default "5" and "0.6 1.0 1.4 2.0"), --speeds yes|no (stage 6,
# default yes; it needs students), --set KEY=VALUE (amends the config of every model,
# repeatable). The nmt and python3 on PATH are used (make setup; . .venv/bin/activate).
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
case "$1" in
    de-en | en-de) direction=${1/-/_} source=${1%-*} target=${1#*-} ;;
    *) echo "error: DIRECTION must be de-en or en-de, got '$1'." >&2; exit 2 ;;
esac
shift
minutes=54 models=3 data="" runs="" amend=() beams="5" alphas="0.6 1.0 1.4 2.0"
students="base" student_data="" student_minutes="" speeds=yes
while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || { echo "error: $1 needs a value." >&2; exit 2; }
    case "$1" in
        --minutes) minutes=$2 ;;
        --models) models=$2 ;;
        --students) students=$2 ;;
        --student-data) student_data=$2 ;;
        --student-minutes) student_minutes=$2 ;;
        --speeds) speeds=$2 ;;
        --data) data=$2 ;;
        --runs) runs=$2 ;;
        --beams) beams=$2 ;;
        --alphas) alphas=$2 ;;
        --set) amend+=(--set "$2") ;;
        *) echo "error: unknown option '$1' (see the top of $0)." >&2; exit 2 ;;
    esac
    shift 2
done
positive_minutes() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] && awk "BEGIN {exit !($1 > 0)}"; }
[[ $models =~ ^[1-9][0-9]*$ ]] || { echo "error: --models must be a positive whole number." >&2; exit 2; }
positive_minutes "$minutes" || { echo "error: --minutes must be a positive number of minutes." >&2; exit 2; }
[[ -z $student_minutes ]] || positive_minutes "$student_minutes" \
    || { echo "error: --student-minutes must be a positive number of minutes." >&2; exit 2; }
[[ $beams =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] \
    || { echo "error: --beams must be beam sizes separated by spaces, e.g. \"5 10\"." >&2; exit 2; }
[[ $alphas =~ ^[0-9]+([.][0-9]+)?( [0-9]+([.][0-9]+)?)*$ ]] \
    || { echo "error: --alphas must be numbers separated by spaces, e.g. \"0.6 1.0\"." >&2; exit 2; }
[[ $speeds == yes || $speeds == no ]] || { echo "error: --speeds must be yes or no." >&2; exit 2; }
for student in $students; do
    [[ $student == base || $student == shallow ]] \
        || { echo "error: --students names base and shallow only, got '$student'." >&2; exit 2; }
done
if [[ -z $student_data ]]; then
    student_data=distilled
    [[ -z $data ]] || student_data="distilled mixed"
fi
for corpus_name in $student_data; do
    [[ $corpus_name == distilled || $corpus_name == mixed ]] \
        || { echo "error: --student-data names distilled and mixed only, got '$corpus_name'." >&2; exit 2; }
    [[ $corpus_name == distilled || -n $data ]] \
        || { echo "error: --student-data mixed needs --data DIR (the original pairs' files)." >&2; exit 2; }
done
student_minutes=${student_minutes:-$(awk "BEGIN {print ($minutes < 30 ? $minutes / 4 : 18)}")}

root=$(cd "$(dirname "$0")/.." && pwd)
config=$root/configs/multi30k_${direction}_best.yaml
runs=${runs:-runs/recipe_multi30k_${direction}}
share=$(awk "BEGIN {print $minutes / $models}")
corpus=() data_option=()
[[ -z $data ]] || corpus=(--set "data.path=$data") data_option=(--data "$data")
grid=()
for beam in $beams; do grid+=(--beam "$beam"); done
for alpha in $alphas; do grid+=(--alpha "$alpha"); done
mkdir -p "$runs"
timing=()
declare -A alpha_of # each system's length penalty chosen on valid, for the speeds

stage() { # NAME: starts timing a stage
    stage_name=$1 stage_start=$(date +%s)
    echo "== $1" >&2
}
stage_done() {
    timing+=("$(awk "BEGIN {printf \"%6.1f\", ($(date +%s) - $stage_start) / 60}") min  $stage_name")
}

train_or_resume() { # RUN ARGS...: trains a model into RUN, keeps it when finished, or resumes it
    local run=$1
    shift
    local train=(nmt train --config "$config" "${amend[@]}" "$@" --run-dir "$run")
    if [[ -f $run/metrics.jsonl ]] && grep -q '"test_bleu"' "$run/metrics.jsonl"; then
        echo "   $run: finished before, kept" >&2
    elif [[ -f $run/last.pt ]]; then
        echo "   $run: resuming" >&2
        "${train[@]}" --resume >&2
    else
        echo "   $run: training" >&2
        "${train[@]}" --overwrite >&2
    fi
}

chosen() { # NAME EVAL-ARGS... -> "beam alpha": nmt eval's grid on valid, kept in RUNS/NAME.grid.json
    local name=$1 kept=$runs/$1.grid.json
    shift
    if [[ ! -s $kept ]]; then
        nmt eval "$@" --split valid "${grid[@]}" --json >"$kept.part"
        mv "$kept.part" "$kept"
    fi
    python3 - "$kept" "$beams" "$alphas" <<'EOF'
import json, sys
found, beams, alphas = json.load(open(sys.argv[1])), sys.argv[2].split(), sys.argv[3].split()
best = found.get("best", {"beam": int(beams[0]), "alpha": float(alphas[0])})  # one setting
for row in found.get("grid", [{**best, **found}]):
    print(f"   beam {row['beam']}, alpha {row.get('alpha', '-')}: valid BLEU {row['bleu']}",
          file=sys.stderr)
print(best["beam"], best.get("alpha", alphas[0]))
EOF
}

stage "teachers: $models models x $share minutes, $config"
teachers=()
for seed in $(seq 1 "$models"); do
    train_or_resume "$runs/seed$seed" "${corpus[@]}" \
        --set "train.max_minutes=$share" --set "train.seed=$seed"
    teachers+=(--checkpoint "$runs/seed$seed/best.pt")
done
stage_done

stage "the ensemble: beam size and length penalty chosen on valid BLEU, then valid and test"
ensemble=("${teachers[@]}")
[[ $models -eq 1 ]] || ensemble+=(--ensemble)
read -r beam alpha < <(chosen ensemble "${ensemble[@]}" "${corpus[@]}")
alpha_of[ensemble]=$alpha
echo "== the ensemble of $models models on valid and test, beam $beam, alpha $alpha" >&2
for split in valid test; do
    echo "ensemble of $models teachers (beam $beam, alpha $alpha), $split:"
    nmt eval "${ensemble[@]}" --split "$split" "${corpus[@]}" --beam "$beam" --alpha "$alpha" \
        --output "$runs/ensemble.$split.$target"
done
stage_done

if [[ -n $students ]]; then
    stage "distillation: the ensemble translates the training sources (beam $beam, alpha $alpha)"
    distilled=$runs/distilled
    nmt distill "${teachers[@]}" --out "$distilled" "${data_option[@]}" \
        --beam "$beam" --alpha "$alpha" >&2
    stage_done
fi

names=() # the students' run names, in order: student_<shape> (distilled), student_<shape>_mixed
for student in $students; do
    for corpus_name in $student_data; do
        shape=() pairs=()
        [[ $student == base ]] || shape=(--set model.encoder.layers=6 --set model.decoder.layers=1)
        name=student_$student
        [[ $corpus_name == distilled ]] || name=${name}_mixed pairs=(--set "data.extra_train=[$data]")
        names+=("$name")
        run=$runs/$name
        stage "$name: $student_minutes minutes on the $corpus_name corpus"
        train_or_resume "$run" --set "data.path=$distilled" "${pairs[@]}" "${shape[@]}" \
            --set "train.max_minutes=$student_minutes" --set train.seed=1
        read -r beam alpha < <(chosen "$name" --checkpoint "$run/best.pt")
        alpha_of[$name]=$alpha
        for split in valid test; do
            echo "$name (beam $beam, alpha $alpha), $split:"
            nmt eval --checkpoint "$run/best.pt" --split "$split" --beam "$beam" --alpha "$alpha" \
                --output "$run/$split.$target"
        done
        stage_done

        stage "$name through CTranslate2, int8"
        rm -rf "$run/ctranslate2"
        nmt export --format ctranslate2 --checkpoint "$run/best.pt" --output "$run/ctranslate2" >&2
        nmt translate --engine ctranslate2 --model "$run/ctranslate2" --quantize int8 \
            --beam "$beam" --alpha "$alpha" --input "$distilled/test_2016_flickr.$source" \
            --output "$run/ctranslate2.test.$target"
        echo "$name, CTranslate2 int8 (beam $beam, alpha $alpha), test:"
        nmt eval --hyp "$run/ctranslate2.test.$target" --ref "$distilled/test_2016_flickr.$target"
        stage_done
    done
done

if [[ ${#names[@]} -gt 0 ]]; then
    systems=(--hyp "$runs/ensemble.test.$target")
    for name in "${names[@]}"; do
        systems+=(--hyp "$runs/$name/test.$target" --hyp "$runs/$name/ctranslate2.test.$target")
    done
    echo "the students against the ensemble, test (paired bootstrap):"
    nmt eval "${systems[@]}" --ref "$distilled/test_2016_flickr.$target"

    echo "repetition: the share of translations that repeat a word 4-gram (valid, test):"
    repeated=("ensemble" "$runs/ensemble.valid.$target" "$runs/ensemble.test.$target")
    for name in "${names[@]}"; do
        repeated+=("$name" "$runs/$name/valid.$target" "$runs/$name/test.$target")
    done
    python3 - "${repeated[@]}" <<'EOF'
import sys


def repeats(line: str, n: int = 4) -> bool:
    words = line.split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)


def share(path: str) -> str:
    lines = open(path, encoding="utf-8").read().splitlines()
    return f"{100 * sum(map(repeats, lines)) / max(len(lines), 1):.1f}% of {len(lines)}"


for index in range(0, len(sys.argv) - 1, 3):
    name, valid, test = sys.argv[1 + index : 4 + index]
    print(f"  {name}: valid {share(valid)}, test {share(test)}")
EOF
fi

if [[ $speeds == yes && ${#names[@]} -gt 0 ]]; then
    stage "speeds: beam-5 sentences/s on test, each system in turn"
    speed() { # LABEL ALPHA BENCH-ARGS...: prints "LABEL: S sentences/s, BLEU B, alpha A"
        local label=$1 alpha=$2 found
        shift 2
        found=$(python3 "$root/scripts/bench_translate.py" "$@" --beam 5 --alpha "$alpha" \
            --no-reference \
            --input "$distilled/test_2016_flickr.$source" \
            --ref "$distilled/test_2016_flickr.$target" | python3 -c 'import json, sys
row = [json.loads(line) for line in sys.stdin if line.startswith("{")][-1]
print(row["sentences_per_s"], "sentences/s, BLEU", row["bleu"])')
        echo "  $label: $found, alpha $alpha"
    }
    echo "beam-5 speed on test (whole processes):"
    speed "ensemble of $models teachers" "${alpha_of[ensemble]}" "${teachers[@]}"
    for name in "${names[@]}"; do
        run=$runs/$name
        alpha=${alpha_of[$name]}
        speed "$name, nmt fp32" "$alpha" --checkpoint "$run/best.pt"
        speed "$name, nmt int8" "$alpha" --checkpoint "$run/best.pt" --quantize int8
        speed "$name, CTranslate2 int8" "$alpha" --model "$run/ctranslate2" --quantize int8
    done
    stage_done
fi

echo "== minutes per stage" >&2
printf '   %s\n' "${timing[@]}" >&2
