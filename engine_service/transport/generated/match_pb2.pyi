import datetime

from . import cards_pb2 as _cards_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OptionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPTION_TYPE_UNSPECIFIED: _ClassVar[OptionType]
    OPTION_TYPE_ENUM: _ClassVar[OptionType]
    OPTION_TYPE_BOOL: _ClassVar[OptionType]
    OPTION_TYPE_INT: _ClassVar[OptionType]

class SeatKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEAT_KIND_UNSPECIFIED: _ClassVar[SeatKind]
    SEAT_KIND_OPEN: _ClassVar[SeatKind]
    SEAT_KIND_BOT: _ClassVar[SeatKind]

class MatchStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_STATUS_UNSPECIFIED: _ClassVar[MatchStatus]
    MATCH_STATUS_WAITING: _ClassVar[MatchStatus]
    MATCH_STATUS_ACTIVE: _ClassVar[MatchStatus]
    MATCH_STATUS_FINISHED: _ClassVar[MatchStatus]
    MATCH_STATUS_TERMINATED: _ClassVar[MatchStatus]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_SNAPSHOT: _ClassVar[EventKind]
    EVENT_KIND_ACTION: _ClassVar[EventKind]
    EVENT_KIND_MATCH_ENDED: _ClassVar[EventKind]
    EVENT_KIND_PRESENCE: _ClassVar[EventKind]
    EVENT_KIND_HEARTBEAT: _ClassVar[EventKind]

class Actor(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTOR_UNSPECIFIED: _ClassVar[Actor]
    ACTOR_PLAYER: _ClassVar[Actor]
    ACTOR_BOT: _ClassVar[Actor]
    ACTOR_AUTO: _ClassVar[Actor]
OPTION_TYPE_UNSPECIFIED: OptionType
OPTION_TYPE_ENUM: OptionType
OPTION_TYPE_BOOL: OptionType
OPTION_TYPE_INT: OptionType
SEAT_KIND_UNSPECIFIED: SeatKind
SEAT_KIND_OPEN: SeatKind
SEAT_KIND_BOT: SeatKind
MATCH_STATUS_UNSPECIFIED: MatchStatus
MATCH_STATUS_WAITING: MatchStatus
MATCH_STATUS_ACTIVE: MatchStatus
MATCH_STATUS_FINISHED: MatchStatus
MATCH_STATUS_TERMINATED: MatchStatus
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_SNAPSHOT: EventKind
EVENT_KIND_ACTION: EventKind
EVENT_KIND_MATCH_ENDED: EventKind
EVENT_KIND_PRESENCE: EventKind
EVENT_KIND_HEARTBEAT: EventKind
ACTOR_UNSPECIFIED: Actor
ACTOR_PLAYER: Actor
ACTOR_BOT: Actor
ACTOR_AUTO: Actor

class OptionValue(_message.Message):
    __slots__ = ("string_value", "int_value", "bool_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    int_value: int
    bool_value: bool
    def __init__(self, string_value: _Optional[str] = ..., int_value: _Optional[int] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class OptionSpec(_message.Message):
    __slots__ = ("name", "type", "default_value", "allowed_values", "minimum", "maximum", "help", "rule_ids", "allowed_text")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_VALUES_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    HELP_FIELD_NUMBER: _ClassVar[int]
    RULE_IDS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TEXT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: OptionType
    default_value: OptionValue
    allowed_values: _containers.RepeatedCompositeFieldContainer[OptionValue]
    minimum: int
    maximum: int
    help: str
    rule_ids: _containers.RepeatedScalarFieldContainer[str]
    allowed_text: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[OptionType, str]] = ..., default_value: _Optional[_Union[OptionValue, _Mapping]] = ..., allowed_values: _Optional[_Iterable[_Union[OptionValue, _Mapping]]] = ..., minimum: _Optional[int] = ..., maximum: _Optional[int] = ..., help: _Optional[str] = ..., rule_ids: _Optional[_Iterable[str]] = ..., allowed_text: _Optional[str] = ...) -> None: ...

class GameInfo(_message.Message):
    __slots__ = ("id", "name", "num_seats", "description", "rulebook", "options")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_SEATS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RULEBOOK_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    num_seats: int
    description: str
    rulebook: str
    options: _containers.RepeatedCompositeFieldContainer[OptionSpec]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., num_seats: _Optional[int] = ..., description: _Optional[str] = ..., rulebook: _Optional[str] = ..., options: _Optional[_Iterable[_Union[OptionSpec, _Mapping]]] = ...) -> None: ...

class BotInfo(_message.Message):
    __slots__ = ("name", "games", "description", "plugin")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    name: str
    games: _containers.RepeatedScalarFieldContainer[str]
    description: str
    plugin: str
    def __init__(self, name: _Optional[str] = ..., games: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., plugin: _Optional[str] = ...) -> None: ...

class OpenSeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BotSeat(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class SeatSpec(_message.Message):
    __slots__ = ("open", "bot")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    open: OpenSeat
    bot: BotSeat
    def __init__(self, open: _Optional[_Union[OpenSeat, _Mapping]] = ..., bot: _Optional[_Union[BotSeat, _Mapping]] = ...) -> None: ...

class SeatInfo(_message.Message):
    __slots__ = ("seat", "kind", "bot", "player_name", "taken", "present", "replaced_by_bot", "left")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_NAME_FIELD_NUMBER: _ClassVar[int]
    TAKEN_FIELD_NUMBER: _ClassVar[int]
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_BOT_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kind: SeatKind
    bot: str
    player_name: str
    taken: bool
    present: bool
    replaced_by_bot: bool
    left: bool
    def __init__(self, seat: _Optional[int] = ..., kind: _Optional[_Union[SeatKind, str]] = ..., bot: _Optional[str] = ..., player_name: _Optional[str] = ..., taken: _Optional[bool] = ..., present: _Optional[bool] = ..., replaced_by_bot: _Optional[bool] = ..., left: _Optional[bool] = ...) -> None: ...

class MatchSummary(_message.Message):
    __slots__ = ("match_id", "game", "options", "status", "seq", "seats", "turn_time", "spectators_allowed", "created_at", "name", "result", "listed", "deal_commitments", "spectator_delay_actions")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: OptionValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[OptionValue, _Mapping]] = ...) -> None: ...
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    TURN_TIME_FIELD_NUMBER: _ClassVar[int]
    SPECTATORS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    LISTED_FIELD_NUMBER: _ClassVar[int]
    DEAL_COMMITMENTS_FIELD_NUMBER: _ClassVar[int]
    SPECTATOR_DELAY_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game: str
    options: _containers.MessageMap[str, OptionValue]
    status: MatchStatus
    seq: int
    seats: _containers.RepeatedCompositeFieldContainer[SeatInfo]
    turn_time: _duration_pb2.Duration
    spectators_allowed: bool
    created_at: _timestamp_pb2.Timestamp
    name: str
    result: _struct_pb2.Struct
    listed: bool
    deal_commitments: _containers.RepeatedScalarFieldContainer[str]
    spectator_delay_actions: int
    def __init__(self, match_id: _Optional[str] = ..., game: _Optional[str] = ..., options: _Optional[_Mapping[str, OptionValue]] = ..., status: _Optional[_Union[MatchStatus, str]] = ..., seq: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[SeatInfo, _Mapping]]] = ..., turn_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., spectators_allowed: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., name: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., listed: _Optional[bool] = ..., deal_commitments: _Optional[_Iterable[str]] = ..., spectator_delay_actions: _Optional[int] = ...) -> None: ...

class TrickPlay(_message.Message):
    __slots__ = ("seat", "card", "joker_mode", "named_suit", "announcement", "details")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    JOKER_MODE_FIELD_NUMBER: _ClassVar[int]
    NAMED_SUIT_FIELD_NUMBER: _ClassVar[int]
    ANNOUNCEMENT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: _cards_pb2.Card
    joker_mode: _cards_pb2.JokerMode
    named_suit: _cards_pb2.Suit
    announcement: _cards_pb2.Announcement
    details: _struct_pb2.Struct
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[_cards_pb2.Card, _Mapping]] = ..., joker_mode: _Optional[_Union[_cards_pb2.JokerMode, str]] = ..., named_suit: _Optional[_Union[_cards_pb2.Suit, str]] = ..., announcement: _Optional[_Union[_cards_pb2.Announcement, str]] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Trick(_message.Message):
    __slots__ = ("plays", "winner", "points")
    PLAYS_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    plays: _containers.RepeatedCompositeFieldContainer[TrickPlay]
    winner: int
    points: int
    def __init__(self, plays: _Optional[_Iterable[_Union[TrickPlay, _Mapping]]] = ..., winner: _Optional[int] = ..., points: _Optional[int] = ...) -> None: ...

class ScoreRow(_message.Message):
    __slots__ = ("name", "values")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[int]] = ...) -> None: ...

class Scores(_message.Message):
    __slots__ = ("totals", "tricks_taken", "deal_results")
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_TAKEN_FIELD_NUMBER: _ClassVar[int]
    DEAL_RESULTS_FIELD_NUMBER: _ClassVar[int]
    totals: _containers.RepeatedCompositeFieldContainer[ScoreRow]
    tricks_taken: _containers.RepeatedScalarFieldContainer[int]
    deal_results: _struct_pb2.ListValue
    def __init__(self, totals: _Optional[_Iterable[_Union[ScoreRow, _Mapping]]] = ..., tricks_taken: _Optional[_Iterable[int]] = ..., deal_results: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("match_id", "seq", "status", "game", "seat", "phase", "deal_number", "dealer", "to_act", "deadline", "hand", "hand_sizes", "legal_actions", "trick", "last_trick", "trick_history", "scores", "over", "winners", "table", "deal_commitment")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    DEAL_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    TO_ACT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZES_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    LAST_TRICK_FIELD_NUMBER: _ClassVar[int]
    TRICK_HISTORY_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    OVER_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    DEAL_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seq: int
    status: MatchStatus
    game: str
    seat: int
    phase: str
    deal_number: int
    dealer: int
    to_act: int
    deadline: _timestamp_pb2.Timestamp
    hand: _containers.RepeatedCompositeFieldContainer[_cards_pb2.Card]
    hand_sizes: _containers.RepeatedScalarFieldContainer[int]
    legal_actions: _containers.RepeatedCompositeFieldContainer[_cards_pb2.Action]
    trick: Trick
    last_trick: Trick
    trick_history: _containers.RepeatedCompositeFieldContainer[Trick]
    scores: Scores
    over: bool
    winners: _containers.RepeatedScalarFieldContainer[int]
    table: _struct_pb2.Struct
    deal_commitment: str
    def __init__(self, match_id: _Optional[str] = ..., seq: _Optional[int] = ..., status: _Optional[_Union[MatchStatus, str]] = ..., game: _Optional[str] = ..., seat: _Optional[int] = ..., phase: _Optional[str] = ..., deal_number: _Optional[int] = ..., dealer: _Optional[int] = ..., to_act: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., hand: _Optional[_Iterable[_Union[_cards_pb2.Card, _Mapping]]] = ..., hand_sizes: _Optional[_Iterable[int]] = ..., legal_actions: _Optional[_Iterable[_Union[_cards_pb2.Action, _Mapping]]] = ..., trick: _Optional[_Union[Trick, _Mapping]] = ..., last_trick: _Optional[_Union[Trick, _Mapping]] = ..., trick_history: _Optional[_Iterable[_Union[Trick, _Mapping]]] = ..., scores: _Optional[_Union[Scores, _Mapping]] = ..., over: _Optional[bool] = ..., winners: _Optional[_Iterable[int]] = ..., table: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., deal_commitment: _Optional[str] = ...) -> None: ...

class Zone(_message.Message):
    __slots__ = ("name", "cards")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    cards: _containers.RepeatedCompositeFieldContainer[_cards_pb2.Card]
    def __init__(self, name: _Optional[str] = ..., cards: _Optional[_Iterable[_Union[_cards_pb2.Card, _Mapping]]] = ...) -> None: ...
