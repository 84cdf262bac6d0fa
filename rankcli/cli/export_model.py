"""Write a trained model for the search engine that serves it, scoring as rankcli scores.

OUT is a directory holding what the engine takes, and a README.md with the commands that load and use it:

  elasticsearch-ltr  o19s LTR plugin: featureset.json, model.json
  opensearch-ltr     OpenSearch LTR plugin: the same bodies
  solr               Solr LTR: features.json, model.json
  elasticsearch      Elasticsearch learning_to_rank: trained_model.json
  vespa              a ranking expression and a rank profile
  onnx               model.onnx (needs the onnx extra)
  ranklib            model.ranklib, a RankLib LambdaMART model

The LTR plugins take --model-type xgboost+json (the default: features by name, missing branches) or ranklib.

Every threshold is written so that each value the engine can hold takes LightGBM's branch (<= in double): the
largest float32 not above it for a float32 engine comparing <=, the next float32 up for a strict one, the float32
that Solr's +1e-6f turns into it (near zero none exists: the nearest is written and the split named), LightGBM's
double where the engine reads doubles. Missing values take LightGBM's branch; what a target cannot state is refused
(exit 3, naming the split): categorical splits, a missing rule the target cannot state, a per-query normalisation.
A model trained on features normalised --per dataset is exported for raw values, the transform folded into the
thresholds (--engine-normalizer writes the engine's own float32 normalisers instead).

--check DATA scores DATA (Parquet or LETOR text, raw features) and synthetic rows placed on, just below and just
above every threshold with rankcli's model and with the written files as the engine evaluates them (onnxruntime
for onnx), and reports the rows on another branch, the largest score difference against the bound float32
summation allows, and the queries whose ranking changes; exit 5 when a row takes another branch.

Example: rankcli export-model model --target solr -o solr-model --check data/test.parquet
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankcli.cli import options as opt
from rankcli.errors import CheckFailed
from rankcli.formats.atomic import model_files

NAME = "export-model"
SHORT_HELP = "Write a trained model for a search engine, exactly, and check it."
TARGET_HELP = "elasticsearch-ltr, opensearch-ltr, solr, elasticsearch, vespa, onnx or ranklib."


def command(
    model_dir: Annotated[Path, typer.Argument(help="Model directory written by `rankcli train`.", show_default=False)],
    target: Annotated[str, typer.Option("--target", "-t", help=f"The engine: {TARGET_HELP}", show_default=False,
                                        metavar="TARGET")],
    output: Annotated[str, opt.output("Directory to write (the engine's files and a README.md).", metavar="OUT")],
    model_type: Annotated[str, typer.Option(
        "--model-type", help="The LTR plugins' model type: xgboost+json (features by name, missing branches) or "
        "ranklib.", metavar="<xgboost+json|ranklib>")] = "xgboost+json",
    feature_map: Annotated[Path | None, typer.Option(
        "--feature-map", help="JSON or TSV giving each model feature the engine's name and definition (a query "
        "template, a Solr feature class and params, a Vespa rank feature); without it the model's names are used and "
        "each definition is left to fill in (README.md lists them).", show_default=False)] = None,
    engine_normalizer: Annotated[bool, typer.Option(
        "--engine-normalizer", help="Write the engine's own normalisers (LTR plugins: standard/min_max; Solr: "
        "StandardNormalizer/MinMaxNormalizer; float32) instead of folding the model's per-dataset normalisation into "
        "the thresholds (exact, the default).")] = False,
    missing_as_zero: Annotated[bool, typer.Option(
        "--missing-as-zero", help="opensearch-ltr: write OpenSearch LTR's model-level missing_as_zero (its master "
        "branch): a missing feature is 0.")] = False,
    name: Annotated[str | None, typer.Option(
        "--name", help="The model's (and featureset's, feature store's, rank profile's) name in the engine "
        "(default: the model directory's name).", show_default=False)] = None,
    check: Annotated[Path | None, typer.Option(
        "--check", help="Score DATA (Parquet or LETOR, raw features) and synthetic on-threshold rows with the "
        "exported files as the engine evaluates them; exit 5 when a row takes another branch than LightGBM.",
        show_default=False, metavar="DATA")] = None,
    overwrite: Annotated[bool, opt.overwrite("export directory")] = False,
    json_out: Annotated[bool, opt.json_flag("the export's summary and the check")] = False,
) -> None:
    from rankcli.cli._common import prepare_output, print_json

    inputs = [*model_files(model_dir)] + [p for p in (feature_map, check) if p is not None]
    output = prepare_output(output, overwrite=overwrite, kind="export", inputs=inputs, example="export")
    from rankcli.runtime.startup import import_lightgbm_lean

    import_lightgbm_lean()
    from rankcli.export_model import ExportOptions, export_model
    from rankcli.export_model.render import report

    options = ExportOptions(model_type=model_type, feature_map=feature_map, engine_normalizer=engine_normalizer,
                            missing_as_zero=missing_as_zero, name=name, check=check)
    result = export_model(model_dir, target, output, options, overwrite=overwrite)
    if json_out:
        print_json(result.as_dict())
    else:
        typer.echo(report(result))
    if not result.passed:
        c = result.check
        raise CheckFailed(f"--check: {c.rows_other_branch} rows of {c.data} and {c.synthetic_other_branch} synthetic "
                          f"rows take another branch than LightGBM, {c.rows_beyond_bound} scores lie beyond the "
                          "rounding bound")
