from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Suit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUIT_UNSPECIFIED: _ClassVar[Suit]
    SUIT_SPADES: _ClassVar[Suit]
    SUIT_HEARTS: _ClassVar[Suit]
    SUIT_DIAMONDS: _ClassVar[Suit]
    SUIT_CLUBS: _ClassVar[Suit]
    SUIT_NO_TRUMP: _ClassVar[Suit]

class Rank(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RANK_UNSPECIFIED: _ClassVar[Rank]
    RANK_ACE: _ClassVar[Rank]
    RANK_KING: _ClassVar[Rank]
    RANK_QUEEN: _ClassVar[Rank]
    RANK_JACK: _ClassVar[Rank]
    RANK_TEN: _ClassVar[Rank]
    RANK_NINE: _ClassVar[Rank]
    RANK_EIGHT: _ClassVar[Rank]
    RANK_SEVEN: _ClassVar[Rank]
    RANK_SIX: _ClassVar[Rank]
    RANK_JOKER: _ClassVar[Rank]

class JokerMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOKER_MODE_UNSPECIFIED: _ClassVar[JokerMode]
    JOKER_MODE_HIGH: _ClassVar[JokerMode]
    JOKER_MODE_LOW: _ClassVar[JokerMode]

class Announcement(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ANNOUNCEMENT_UNSPECIFIED: _ClassVar[Announcement]
    ANNOUNCEMENT_JO: _ClassVar[Announcement]
    ANNOUNCEMENT_JOTTE: _ClassVar[Announcement]
    ANNOUNCEMENT_BELLA: _ClassVar[Announcement]

class ActionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_KIND_UNSPECIFIED: _ClassVar[ActionKind]
    ACTION_KIND_OTHER: _ClassVar[ActionKind]
    ACTION_KIND_PLAY: _ClassVar[ActionKind]
    ACTION_KIND_PASS: _ClassVar[ActionKind]
    ACTION_KIND_TAKE: _ClassVar[ActionKind]
    ACTION_KIND_ACCEPT: _ClassVar[ActionKind]
    ACTION_KIND_NAME: _ClassVar[ActionKind]
    ACTION_KIND_NO_TRUMP: _ClassVar[ActionKind]
    ACTION_KIND_DOUBLE: _ClassVar[ActionKind]
    ACTION_KIND_REDOUBLE: _ClassVar[ActionKind]
    ACTION_KIND_EXCHANGE: _ClassVar[ActionKind]
    ACTION_KIND_NO_EXCHANGE: _ClassVar[ActionKind]
    ACTION_KIND_KEEP: _ClassVar[ActionKind]
    ACTION_KIND_NULLO: _ClassVar[ActionKind]
    ACTION_KIND_SLAM: _ClassVar[ActionKind]
    ACTION_KIND_TRUMP: _ClassVar[ActionKind]
    ACTION_KIND_BID: _ClassVar[ActionKind]
SUIT_UNSPECIFIED: Suit
SUIT_SPADES: Suit
SUIT_HEARTS: Suit
SUIT_DIAMONDS: Suit
SUIT_CLUBS: Suit
SUIT_NO_TRUMP: Suit
RANK_UNSPECIFIED: Rank
RANK_ACE: Rank
RANK_KING: Rank
RANK_QUEEN: Rank
RANK_JACK: Rank
RANK_TEN: Rank
RANK_NINE: Rank
RANK_EIGHT: Rank
RANK_SEVEN: Rank
RANK_SIX: Rank
RANK_JOKER: Rank
JOKER_MODE_UNSPECIFIED: JokerMode
JOKER_MODE_HIGH: JokerMode
JOKER_MODE_LOW: JokerMode
ANNOUNCEMENT_UNSPECIFIED: Announcement
ANNOUNCEMENT_JO: Announcement
ANNOUNCEMENT_JOTTE: Announcement
ANNOUNCEMENT_BELLA: Announcement
ACTION_KIND_UNSPECIFIED: ActionKind
ACTION_KIND_OTHER: ActionKind
ACTION_KIND_PLAY: ActionKind
ACTION_KIND_PASS: ActionKind
ACTION_KIND_TAKE: ActionKind
ACTION_KIND_ACCEPT: ActionKind
ACTION_KIND_NAME: ActionKind
ACTION_KIND_NO_TRUMP: ActionKind
ACTION_KIND_DOUBLE: ActionKind
ACTION_KIND_REDOUBLE: ActionKind
ACTION_KIND_EXCHANGE: ActionKind
ACTION_KIND_NO_EXCHANGE: ActionKind
ACTION_KIND_KEEP: ActionKind
ACTION_KIND_NULLO: ActionKind
ACTION_KIND_SLAM: ActionKind
ACTION_KIND_TRUMP: ActionKind
ACTION_KIND_BID: ActionKind

class Card(_message.Message):
    __slots__ = ("code", "suit", "rank")
    CODE_FIELD_NUMBER: _ClassVar[int]
    SUIT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    code: str
    suit: Suit
    rank: Rank
    def __init__(self, code: _Optional[str] = ..., suit: _Optional[_Union[Suit, str]] = ..., rank: _Optional[_Union[Rank, str]] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("notation", "kind", "verb", "card", "suit", "number", "joker_mode", "named_suit", "announcement", "args")
    NOTATION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VERB_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    SUIT_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    JOKER_MODE_FIELD_NUMBER: _ClassVar[int]
    NAMED_SUIT_FIELD_NUMBER: _ClassVar[int]
    ANNOUNCEMENT_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    notation: str
    kind: ActionKind
    verb: str
    card: Card
    suit: Suit
    number: int
    joker_mode: JokerMode
    named_suit: Suit
    announcement: Announcement
    args: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, notation: _Optional[str] = ..., kind: _Optional[_Union[ActionKind, str]] = ..., verb: _Optional[str] = ..., card: _Optional[_Union[Card, _Mapping]] = ..., suit: _Optional[_Union[Suit, str]] = ..., number: _Optional[int] = ..., joker_mode: _Optional[_Union[JokerMode, str]] = ..., named_suit: _Optional[_Union[Suit, str]] = ..., announcement: _Optional[_Union[Announcement, str]] = ..., args: _Optional[_Iterable[str]] = ...) -> None: ...
