import datetime

from . import cards_pb2 as _cards_pb2
from . import match_pb2 as _match_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListGamesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListGamesResponse(_message.Message):
    __slots__ = ("games",)
    GAMES_FIELD_NUMBER: _ClassVar[int]
    games: _containers.RepeatedCompositeFieldContainer[_match_pb2.GameInfo]
    def __init__(self, games: _Optional[_Iterable[_Union[_match_pb2.GameInfo, _Mapping]]] = ...) -> None: ...

class ListBotsRequest(_message.Message):
    __slots__ = ("game",)
    GAME_FIELD_NUMBER: _ClassVar[int]
    game: str
    def __init__(self, game: _Optional[str] = ...) -> None: ...

class ListBotsResponse(_message.Message):
    __slots__ = ("bots", "load_failures")
    BOTS_FIELD_NUMBER: _ClassVar[int]
    LOAD_FAILURES_FIELD_NUMBER: _ClassVar[int]
    bots: _containers.RepeatedCompositeFieldContainer[_match_pb2.BotInfo]
    load_failures: _containers.RepeatedCompositeFieldContainer[BotLoadFailure]
    def __init__(self, bots: _Optional[_Iterable[_Union[_match_pb2.BotInfo, _Mapping]]] = ..., load_failures: _Optional[_Iterable[_Union[BotLoadFailure, _Mapping]]] = ...) -> None: ...

class BotLoadFailure(_message.Message):
    __slots__ = ("plugin", "stage", "reason")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    stage: str
    reason: str
    def __init__(self, plugin: _Optional[str] = ..., stage: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ListOpenMatchesRequest(_message.Message):
    __slots__ = ("game", "limit", "page_token")
    GAME_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    game: str
    limit: int
    page_token: str
    def __init__(self, game: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOpenMatchesResponse(_message.Message):
    __slots__ = ("matches", "next_page_token")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[_match_pb2.MatchSummary]
    next_page_token: str
    def __init__(self, matches: _Optional[_Iterable[_Union[_match_pb2.MatchSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Deck(_message.Message):
    __slots__ = ("cards",)
    CARDS_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cards: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateMatchRequest(_message.Message):
    __slots__ = ("game", "options", "seats", "turn_time", "spectators_allowed", "name", "decks", "first_dealer", "listed", "spectator_delay_actions", "client_create_id")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _match_pb2.OptionValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_match_pb2.OptionValue, _Mapping]] = ...) -> None: ...
    GAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    TURN_TIME_FIELD_NUMBER: _ClassVar[int]
    SPECTATORS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DECKS_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    LISTED_FIELD_NUMBER: _ClassVar[int]
    SPECTATOR_DELAY_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CREATE_ID_FIELD_NUMBER: _ClassVar[int]
    game: str
    options: _containers.MessageMap[str, _match_pb2.OptionValue]
    seats: _containers.RepeatedCompositeFieldContainer[_match_pb2.SeatSpec]
    turn_time: _duration_pb2.Duration
    spectators_allowed: bool
    name: str
    decks: _containers.RepeatedCompositeFieldContainer[Deck]
    first_dealer: int
    listed: bool
    spectator_delay_actions: int
    client_create_id: str
    def __init__(self, game: _Optional[str] = ..., options: _Optional[_Mapping[str, _match_pb2.OptionValue]] = ..., seats: _Optional[_Iterable[_Union[_match_pb2.SeatSpec, _Mapping]]] = ..., turn_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., spectators_allowed: _Optional[bool] = ..., name: _Optional[str] = ..., decks: _Optional[_Iterable[_Union[Deck, _Mapping]]] = ..., first_dealer: _Optional[int] = ..., listed: _Optional[bool] = ..., spectator_delay_actions: _Optional[int] = ..., client_create_id: _Optional[str] = ...) -> None: ...

class CreateMatchResponse(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: _match_pb2.MatchSummary
    def __init__(self, match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ...) -> None: ...

class GetMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetMatchResponse(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: _match_pb2.MatchSummary
    def __init__(self, match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ...) -> None: ...

class JoinMatchRequest(_message.Message):
    __slots__ = ("match_id", "seat", "player_name", "client_join_id")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_JOIN_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    player_name: str
    client_join_id: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., player_name: _Optional[str] = ..., client_join_id: _Optional[str] = ...) -> None: ...

class JoinMatchResponse(_message.Message):
    __slots__ = ("match_id", "seat", "seat_token")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    seat_token: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., seat_token: _Optional[str] = ...) -> None: ...

class GetViewRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetViewResponse(_message.Message):
    __slots__ = ("view",)
    VIEW_FIELD_NUMBER: _ClassVar[int]
    view: _match_pb2.View
    def __init__(self, view: _Optional[_Union[_match_pb2.View, _Mapping]] = ...) -> None: ...

class SubmitActionRequest(_message.Message):
    __slots__ = ("match_id", "action", "expected_seq", "client_action_id")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_SEQ_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    action: str
    expected_seq: int
    client_action_id: str
    def __init__(self, match_id: _Optional[str] = ..., action: _Optional[str] = ..., expected_seq: _Optional[int] = ..., client_action_id: _Optional[str] = ...) -> None: ...

class SubmitActionResponse(_message.Message):
    __slots__ = ("seq", "action", "view", "duplicate")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    action: _cards_pb2.Action
    view: _match_pb2.View
    duplicate: bool
    def __init__(self, seq: _Optional[int] = ..., action: _Optional[_Union[_cards_pb2.Action, _Mapping]] = ..., view: _Optional[_Union[_match_pb2.View, _Mapping]] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class WatchMatchRequest(_message.Message):
    __slots__ = ("match_id", "after_seq")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    after_seq: int
    def __init__(self, match_id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class WatchMatchResponse(_message.Message):
    __slots__ = ("kind", "seq", "match_id", "seat", "action", "by", "reason", "view", "details")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    kind: _match_pb2.EventKind
    seq: int
    match_id: str
    seat: int
    action: _cards_pb2.Action
    by: _match_pb2.Actor
    reason: str
    view: _match_pb2.View
    details: _struct_pb2.Struct
    def __init__(self, kind: _Optional[_Union[_match_pb2.EventKind, str]] = ..., seq: _Optional[int] = ..., match_id: _Optional[str] = ..., seat: _Optional[int] = ..., action: _Optional[_Union[_cards_pb2.Action, _Mapping]] = ..., by: _Optional[_Union[_match_pb2.Actor, str]] = ..., reason: _Optional[str] = ..., view: _Optional[_Union[_match_pb2.View, _Mapping]] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class LeaveMatchRequest(_message.Message):
    __slots__ = ("match_id", "resign")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RESIGN_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    resign: bool
    def __init__(self, match_id: _Optional[str] = ..., resign: _Optional[bool] = ...) -> None: ...

class LeaveMatchResponse(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: _match_pb2.MatchSummary
    def __init__(self, match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ...) -> None: ...

class RevealDealsRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class DealReveal(_message.Message):
    __slots__ = ("deal", "cards", "salt", "commitment", "card_salts", "card_hashes")
    DEAL_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    CARD_SALTS_FIELD_NUMBER: _ClassVar[int]
    CARD_HASHES_FIELD_NUMBER: _ClassVar[int]
    deal: int
    cards: _containers.RepeatedScalarFieldContainer[str]
    salt: str
    commitment: str
    card_salts: _containers.RepeatedScalarFieldContainer[str]
    card_hashes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, deal: _Optional[int] = ..., cards: _Optional[_Iterable[str]] = ..., salt: _Optional[str] = ..., commitment: _Optional[str] = ..., card_salts: _Optional[_Iterable[str]] = ..., card_hashes: _Optional[_Iterable[str]] = ...) -> None: ...

class RevealDealsResponse(_message.Message):
    __slots__ = ("deals",)
    DEALS_FIELD_NUMBER: _ClassVar[int]
    deals: _containers.RepeatedCompositeFieldContainer[DealReveal]
    def __init__(self, deals: _Optional[_Iterable[_Union[DealReveal, _Mapping]]] = ...) -> None: ...
