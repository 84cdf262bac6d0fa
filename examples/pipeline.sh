#!/usr/bin/env bash
# The README's main job, end to end on the bundled sample data (150 queries):
#   1. convert the LETOR text files to Parquet;
#   2. a small experiment: random 60/20/20 query splits, LambdaMART vs XE-NDCG vs ListNet side by side, tested with
#      the corrected resampled t-test across trials (the trials share queries, so the plain t-test would be too sure);
#   3. simulate cascade clicks on the training and validation queries;
#   4. train XE-NDCG and LambdaMART on the clicks (and XE-NDCG on the graded labels, for reference);
#   5. compare the three models on the graded test queries with paired tests.
# Usage: examples/pipeline.sh OUT_DIR [RANKCLI]   (RANKCLI: path of the rankcli executable; default: rankcli on PATH)
# Finishes in well under two minutes on a 2-core machine; rerunning it replaces OUT_DIR's contents.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    echo "usage: $0 OUT_DIR [RANKCLI]" >&2
    exit 2
fi
out=$1
rankcli=${2:-rankcli}
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/sample_data/letor"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*" >&2; }

step "1. convert $data -> $out/data"
"$rankcli" convert "$data" -o "$out/data" --overwrite > /dev/null

step "2. experiment: 5 random splits x {lambdamart, xendcg, listnet}, corrected resampled t-tests across the trials \
(summary: $out/exp/summary.md)"
"$rankcli" experiment "$out/data" -o "$out/exp" --losses lambdamart,xendcg,listnet --trials 5 \
    --trees 60 --early-stopping 20 --jobs 2 --seed 0 --overwrite --test corrected-ttest

step "3. simulate cascade clicks (10 random rankings per query, click probabilities .05,.3,.5,.7,.95)"
"$rankcli" simulate-clicks "$out/data/train.parquet" -o "$out/clicks-train.parquet" --seed 1 --overwrite > /dev/null
"$rankcli" simulate-clicks "$out/data/vali.parquet" -o "$out/clicks-vali.parquet" --seed 2 --overwrite > /dev/null

step "4. train on clicks (xendcg, lambdamart) and on graded labels (xendcg)"
for loss in xendcg lambdamart; do
    "$rankcli" train "$out/clicks-train.parquet" --valid "$out/clicks-vali.parquet" --loss "$loss" \
        --trees 100 --early-stopping 20 --threads 2 -o "$out/model-clicks-$loss" --overwrite > /dev/null
done
"$rankcli" train "$out/data/train.parquet" --valid "$out/data/vali.parquet" --loss xendcg \
    --trees 100 --early-stopping 20 --threads 2 -o "$out/model-graded-xendcg" --overwrite > /dev/null
for model in graded-xendcg clicks-xendcg clicks-lambdamart; do
    "$rankcli" predict "$out/model-$model" "$out/data/test.parquet" -o "$out/run-$model.parquet" --overwrite \
        > /dev/null
done

step "5. compare on the graded test queries (paired t-tests, Holm)"
"$rankcli" compare "$out/run-graded-xendcg.parquet" "$out/run-clicks-xendcg.parquet" \
    "$out/run-clicks-lambdamart.parquet" --name graded-xendcg --name clicks-xendcg --name clicks-lambdamart
