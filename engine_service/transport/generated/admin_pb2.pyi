from . import card_games_pb2 as _card_games_pb2
from . import cards_pb2 as _cards_pb2
from . import match_pb2 as _match_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListMatchesRequest(_message.Message):
    __slots__ = ("status", "game", "limit", "page_token")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    status: _match_pb2.MatchStatus
    game: str
    limit: int
    page_token: str
    def __init__(self, status: _Optional[_Union[_match_pb2.MatchStatus, str]] = ..., game: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListMatchesResponse(_message.Message):
    __slots__ = ("matches", "next_page_token")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[_match_pb2.MatchSummary]
    next_page_token: str
    def __init__(self, matches: _Optional[_Iterable[_Union[_match_pb2.MatchSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class InspectMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class SeatCards(_message.Message):
    __slots__ = ("seat", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedCompositeFieldContainer[_cards_pb2.Card]
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[_cards_pb2.Card, _Mapping]]] = ...) -> None: ...

class InspectMatchResponse(_message.Message):
    __slots__ = ("match", "view", "hands", "zones", "first_dealer", "decks")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    ZONES_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    DECKS_FIELD_NUMBER: _ClassVar[int]
    match: _match_pb2.MatchSummary
    view: _match_pb2.View
    hands: _containers.RepeatedCompositeFieldContainer[SeatCards]
    zones: _containers.RepeatedCompositeFieldContainer[_match_pb2.Zone]
    first_dealer: int
    decks: _containers.RepeatedCompositeFieldContainer[_card_games_pb2.Deck]
    def __init__(self, match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ..., view: _Optional[_Union[_match_pb2.View, _Mapping]] = ..., hands: _Optional[_Iterable[_Union[SeatCards, _Mapping]]] = ..., zones: _Optional[_Iterable[_Union[_match_pb2.Zone, _Mapping]]] = ..., first_dealer: _Optional[int] = ..., decks: _Optional[_Iterable[_Union[_card_games_pb2.Deck, _Mapping]]] = ...) -> None: ...

class TerminateMatchRequest(_message.Message):
    __slots__ = ("match_id", "reason")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    reason: str
    def __init__(self, match_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class TerminateMatchResponse(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: _match_pb2.MatchSummary
    def __init__(self, match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ...) -> None: ...

class ExportTranscriptRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class ExportTranscriptResponse(_message.Message):
    __slots__ = ("transcript_json",)
    TRANSCRIPT_JSON_FIELD_NUMBER: _ClassVar[int]
    transcript_json: str
    def __init__(self, transcript_json: _Optional[str] = ...) -> None: ...

class ReissueSeatTokenRequest(_message.Message):
    __slots__ = ("match_id", "seat")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class ReissueSeatTokenResponse(_message.Message):
    __slots__ = ("seat", "seat_token", "match")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    seat: int
    seat_token: str
    match: _match_pb2.MatchSummary
    def __init__(self, seat: _Optional[int] = ..., seat_token: _Optional[str] = ..., match: _Optional[_Union[_match_pb2.MatchSummary, _Mapping]] = ...) -> None: ...
