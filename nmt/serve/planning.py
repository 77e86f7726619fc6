"""How `nmt serve` plans a request before any of it is decoded: each sentence checked
against the model that translates it (its id, n_best, language, path and constraints, a
422 naming the field where one is wrong), then grouped by what decodes it together."""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError

from nmt.data.markup import MarkupError, parse
from nmt.serve.api import TranslateRequest, excerpt
from nmt.serve.catalog import Item, ServedModel, chained
from nmt.translate.constraints import ConstraintError, check_constraints, parse_constraints
from nmt.translate.markup import knows_tags
from nmt.translate.memory import remembers
from nmt.translate.routing import RouteError, check_route, target_of


def plan(
    models: dict[str, ServedModel], items: list[TranslateRequest]
) -> tuple[dict[tuple, list[tuple[int, Item]]], int]:
    """Groups the inputs by (model id and adapter, decode settings, target and source
    language, chain, markup), each group one batcher job: a batch is of one adapter.

    All inputs of a request must give the same n_best: the answer is laid out by rank.
    """
    groups: dict[tuple, list[tuple[int, Item]]] = {}
    nbest = None
    for index, request in enumerate(items):
        model = models.get(str(request.id))
        if model is None:
            known = ", ".join(repr(name) for name in models)
            raise HTTPException(
                404,
                f"unknown model id {excerpt(request.id)!r}: set id to one this server has, "
                f"{known} (GET /translator/models)",
            )
        try:
            model = model.with_adapter(request.adapter)
        except ValueError as error:
            raise invalid(index, "adapter", str(error), excerpt(request.adapter)) from None
        route = (str(request.id), request.adapter)
        if remembers(model.translator, request.tgt_lang) and (field := memory_conflict(request)):
            problem = (
                f"the model translates with a translation memory (--tm), and {field} cannot "
                "go with one (an appended fuzzy match changes the source it refers to; an "
                "exact match is not searched): leave it out"
            )
            raise invalid(index, field, problem, excerpt(str(getattr(request, field))))
        try:
            decode = model.settings(request.beam, request.n_best, request.through)
        except ValueError as error:
            raise invalid(index, "n_best", str(error), request.n_best) from None
        writer = _chain_end(models, model, request, index)
        if nbest is not None and decode.nbest != nbest:
            detail = (
                f"all inputs of a request need the same n_best; earlier ones have {nbest}: "
                f"give this one n_best {nbest} too, or send it in another request"
            )
            raise invalid(index, "n_best", detail, request.n_best)
        nbest = decode.nbest
        try:
            translator = chained(models, route, request.then, decode.through)
            target = target_of(translator, request.tgt_lang)
            check_route(translator, decode, target, request.src_lang)
        except RouteError as error:
            given = excerpt(getattr(request, error.field))
            raise invalid(index, error.field, error.detail, given) from None
        if problem := writer.language_error(request.tgt_lang):
            raise invalid(index, "tgt_lang", problem, request.tgt_lang)
        if request.markup is not None and (problem := markup_conflict(request, decode.nbest)):
            raise invalid(index, "markup", problem, request.markup)
        if request.markup == "xml" and (problem := xml_error(request.src)):
            raise invalid(index, "src", problem, excerpt(request.src))
        wanted = request.constraints.model_dump() if request.constraints is not None else None
        try:  # against the settings of the model that writes the translation: a chain's second
            check_constraints(
                writer.translator.towards(request.tgt_lang),
                request.src,
                wanted,
                request.prefix,
                decode if writer is model else writer.translator.decode,
            )
        except ConstraintError as error:
            raise refused(request, error.at(index)) from None
        item = Item(
            request.src,
            index,
            request.alignments,
            request.attention,
            parse_constraints(wanted),
            request.prefix,
        )
        if request.markup_placement is not None and (problem := placement_error(request, model)):
            raise invalid(index, "markup_placement", problem, request.markup_placement)
        marked = (request.markup, request.markup_placement)
        key = (route, decode, request.tgt_lang, request.src_lang, request.then, *marked)
        groups.setdefault(key, []).append((index, item))
    return groups, nbest or 1


def memory_conflict(request: TranslateRequest) -> str | None:
    """The first field of `request` that a model with a translation memory cannot take."""
    fields = ("alignments", "attention", "constraints", "prefix", "through", "then", "markup")
    return next((field for field in fields if getattr(request, field)), None)


def placement_error(request: TranslateRequest, model: ServedModel) -> str | None:
    """Why a request's markup_placement cannot be: no markup, or tags the model never
    learnt to place."""
    if request.markup is None:
        return "places the tags of a marked-up src: set markup too, or leave it out"
    if request.markup_placement != "projection" and not knows_tags(model.translator):
        return (
            f"{request.markup_placement!r} has the model place the tags itself, and this "
            "model was not trained to (data.markup_augment): use 'projection', or leave it out"
        )
    return None


def markup_conflict(request: TranslateRequest, nbest: int) -> str | None:
    """What cannot go with markup: the fields that name one sentence's translation, which a
    marked-up src, several sentences joined with their tags, does not have."""
    given = {
        "n_best > 1": nbest > 1,
        "alignments": request.alignments,
        "attention": request.attention,
        "constraints": request.constraints is not None,
        "prefix": request.prefix is not None,
    }
    named = [name for name, present in given.items() if present]
    if not named:
        return None
    return (
        f"a marked-up src is answered once, with its tags, from the translations of the "
        f"sentences it holds, so {', '.join(named)} cannot go with markup: leave them out, "
        "or send plain text"
    )


def xml_error(src: str) -> str | None:
    """Why src is not well-formed XML, naming line and column, or None."""
    try:
        parse(src, "xml")
    except MarkupError as error:
        return f"not well-formed XML at {error}: close each element in order, or send markup html"
    return None


def _chain_end(
    models: dict[str, ServedModel], model: ServedModel, request: TranslateRequest, index: int
) -> ServedModel:
    """The model that writes the request's translation: the one it names in `then`, or its
    own (whether their languages meet, `check_route` says)."""
    if request.then is None:
        return model
    second = models.get(request.then)
    if second is None:
        known = ", ".join(repr(name) for name in models)
        problem = f"unknown model id: set then to one this server has, {known}"
        raise invalid(index, "then", problem, excerpt(request.then))
    return second


def invalid(index: int, field: str, message: str, value: object) -> RequestValidationError:
    """A 422 in the same form as pydantic's own, naming body[index].field."""
    error = {"type": "value_error", "loc": ("body", index, *field.split(".")), "msg": message}
    return RequestValidationError([{**error, "input": value}])


def refused(request: TranslateRequest, error: ConstraintError) -> RequestValidationError:
    """A 422 naming the constraints or prefix of the request's sentence `error.index`."""
    given = getattr(request, error.field.split(".")[0])
    return invalid(error.index, error.field, error.detail, jsonable_encoder(given))
