#!/usr/bin/env bash
# The Multi30k recipe: the best translation from its 29k training pairs alone.
#
# Trains MODELS models of configs/multi30k_<src>_<tgt>_best.yaml with seeds 1..MODELS, each for
# an equal share of MINUTES; picks the beam size and length penalty of their best checkpoints'
# ensemble on the valid split; then scores the ensemble on the test split with them, printing
# BLEU and chrF with sacrebleu's signatures (on stdout; progress goes to stderr).
# Run it again to resume: finished models are kept, an interrupted one goes on from its last
# checkpoint.
#
#   scripts/recipe_multi30k.sh de-en                      # 120 minutes of training in all
#   scripts/recipe_multi30k.sh en-de --data DIR           # {train,val,test_2016_flickr}.{de,en}
#   scripts/recipe_multi30k.sh de-en --minutes 8          # a quick check of the whole pipeline
#
# Options: --minutes M (training minutes in all, default 120), --models N (ensemble size,
# default 4), --data DIR (corpus files; default: the Hugging Face hub), --runs DIR (default
# runs/recipe_multi30k_<src>_<tgt>), --beams "K ..." and --alphas "A ..." (the grid tried on
# valid, default "5 10" and "0.6 1.0 1.4 2.0"), --set KEY=VALUE (amends the config,
# repeatable). The nmt on PATH is used (make setup; . .venv/bin/activate).
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
case "$1" in
    de-en | en-de) direction=${1/-/_} ;;
    *) echo "error: DIRECTION must be de-en or en-de, got '$1'." >&2; exit 2 ;;
esac
shift
minutes=120 models=4 data="" runs="" amend=() beams="5 10" alphas="0.6 1.0 1.4 2.0"
while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || { echo "error: $1 needs a value." >&2; exit 2; }
    case "$1" in
        --minutes) minutes=$2 ;;
        --models) models=$2 ;;
        --data) data=$2 ;;
        --runs) runs=$2 ;;
        --beams) beams=$2 ;;
        --alphas) alphas=$2 ;;
        --set) amend+=(--set "$2") ;;
        *) echo "error: unknown option '$1' (see the top of $0)." >&2; exit 2 ;;
    esac
    shift 2
done
[[ $models =~ ^[1-9][0-9]*$ ]] || { echo "error: --models must be a positive whole number." >&2; exit 2; }
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] && awk "BEGIN {exit !($minutes > 0)}" \
    || { echo "error: --minutes must be a positive number of minutes." >&2; exit 2; }
[[ $beams =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] \
    || { echo "error: --beams must be beam sizes separated by spaces, e.g. \"5 10\"." >&2; exit 2; }
[[ $alphas =~ ^[0-9]+([.][0-9]+)?( [0-9]+([.][0-9]+)?)*$ ]] \
    || { echo "error: --alphas must be numbers separated by spaces, e.g. \"0.6 1.0\"." >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
config=$root/configs/multi30k_${direction}_best.yaml
runs=${runs:-runs/recipe_multi30k_${direction}}
share=$(awk "BEGIN {print $minutes / $models}")
corpus=()
[[ -z $data ]] || corpus=(--set "data.path=$data")

echo "== $direction: $models models x $share minutes, $config" >&2
members=()
for seed in $(seq 1 "$models"); do
    run=$runs/seed$seed
    train=(nmt train --config "$config" "${corpus[@]}" "${amend[@]}"
        --set "train.max_minutes=$share" --set "train.seed=$seed" --run-dir "$run")
    if [[ -f $run/metrics.jsonl ]] && grep -q '"test_bleu"' "$run/metrics.jsonl"; then
        echo "== seed $seed: finished before, kept" >&2
    elif [[ -f $run/last.pt ]]; then
        echo "== seed $seed: resuming" >&2
        "${train[@]}" --resume >&2
    else
        echo "== seed $seed: training" >&2
        "${train[@]}" --overwrite >&2
    fi
    members+=(--checkpoint "$run/best.pt")
done

ensemble_bleu() { # SPLIT BEAM ALPHA -> the ensemble's BLEU
    nmt eval "${members[@]}" --ensemble --split "$1" "${corpus[@]}" --beam "$2" --alpha "$3" \
        --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["bleu"])'
}

echo "== beam size and length penalty of the ensemble, chosen on valid BLEU" >&2
best=""
for beam in $beams; do
    for alpha in $alphas; do
        bleu=$(ensemble_bleu valid "$beam" "$alpha")
        echo "   beam $beam, alpha $alpha: valid BLEU $bleu" >&2
        if [[ -z $best ]] || awk "BEGIN {exit !($bleu > ${best%% *})}"; then
            best="$bleu $beam $alpha"
        fi
    done
done
read -r _ beam alpha <<<"$best"
echo "== the ensemble of $models models on test, beam $beam, alpha $alpha" >&2
nmt eval "${members[@]}" --ensemble --split test "${corpus[@]}" --beam "$beam" --alpha "$alpha"
