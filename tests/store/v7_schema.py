"""The schemas of version 7 (the idempotent creation's release: matches.create_hash and
create_digest), verbatim: the tests make databases of that release with them and check that the
current stores migrate them (docs/operations.md, Upgrades). Never edit these: they are history."""

SQLITE_V7 = """
CREATE TABLE matches (
    match_id           TEXT PRIMARY KEY,
    game               TEXT NOT NULL,
    options            TEXT NOT NULL,          -- JSON object: non-default table options
    first_dealer       INTEGER NOT NULL,
    turn_time_s        REAL NOT NULL,
    reconnect_grace_s  REAL NOT NULL,
    spectators_allowed INTEGER NOT NULL,
    name               TEXT NOT NULL,
    takeover_bot       TEXT NOT NULL,
    created_at         REAL NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('waiting', 'active', 'finished', 'terminated')),
    result             TEXT,                   -- JSON object once the match has ended
    ended_at           REAL,
    listed             INTEGER NOT NULL DEFAULT 0,  -- in the lobby while waiting (schema 2)
    deal_commitments   TEXT,                   -- JSON list, recorded at the end (schema 4)
    spectator_delay_actions INTEGER NOT NULL DEFAULT 0, -- spectators' lag in actions (schema 5)
    create_hash        TEXT,                   -- sha256 hex of the client_create_id (NULL: none; schema 7)
    create_digest      TEXT                    -- sha256 hex of the request it created (schema 7)
);
CREATE INDEX matches_by_status ON matches (status, created_at);
CREATE INDEX matches_by_creation ON matches (created_at, match_id);
CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL;

CREATE TABLE seats (
    match_id    TEXT NOT NULL REFERENCES matches (match_id),
    seat        INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('open', 'bot')),
    bot         TEXT NOT NULL,
    player_name TEXT NOT NULL,
    token_hash  TEXT,                           -- sha256 hex of the seat token (NULL: free)
    joined_at   REAL,
    left_match  INTEGER NOT NULL,
    join_hash   TEXT,                           -- sha256 hex of the client_join_id (NULL: none; schema 6)
    PRIMARY KEY (match_id, seat)
);
CREATE UNIQUE INDEX seats_by_token ON seats (token_hash) WHERE token_hash IS NOT NULL;

CREATE TABLE decks (
    match_id TEXT NOT NULL REFERENCES matches (match_id),
    deal     INTEGER NOT NULL,
    cards    TEXT NOT NULL,                     -- JSON list of card codes, top card first
    salt     TEXT NOT NULL DEFAULT '',          -- commitment salt, 32 hex ('': none; schema 3)
    scheme   INTEGER NOT NULL DEFAULT 1,        -- commitment scheme (schema 4; 1: whole deck)
    PRIMARY KEY (match_id, deal)
);

CREATE TABLE match_actions (
    match_id         TEXT NOT NULL REFERENCES matches (match_id),
    seq              INTEGER NOT NULL,
    seat             INTEGER NOT NULL,
    action           TEXT NOT NULL,
    by_whom          TEXT NOT NULL,
    client_action_id TEXT,                      -- NULL for bot and auto moves
    reason           TEXT NOT NULL,
    at               REAL NOT NULL,
    PRIMARY KEY (match_id, seq)
);
CREATE UNIQUE INDEX match_actions_by_client_id
    ON match_actions (match_id, seat, client_action_id) WHERE client_action_id IS NOT NULL;
"""

POSTGRES_V7 = (
    """CREATE TABLE engine_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE matches (
        match_id           TEXT PRIMARY KEY,
        game               TEXT NOT NULL,
        options            JSONB NOT NULL,          -- non-default table options
        first_dealer       INTEGER NOT NULL,
        turn_time_s        DOUBLE PRECISION NOT NULL,
        reconnect_grace_s  DOUBLE PRECISION NOT NULL,
        spectators_allowed BOOLEAN NOT NULL,
        name               TEXT NOT NULL,
        takeover_bot       TEXT NOT NULL,
        created_at         DOUBLE PRECISION NOT NULL,  -- Unix time, seconds
        status             TEXT NOT NULL CHECK (status IN ('waiting', 'active', 'finished', 'terminated')),
        result             JSONB,                   -- once the match has ended
        ended_at           DOUBLE PRECISION,
        listed             BOOLEAN NOT NULL DEFAULT false,  -- in the lobby while waiting (schema 2)
        deal_commitments   TEXT[],                 -- recorded at the end (schema 4)
        spectator_delay_actions INTEGER NOT NULL DEFAULT 0, -- spectators' lag in actions (schema 5)
        create_hash        TEXT,                    -- sha256 hex of the client_create_id (NULL: none; schema 7)
        create_digest      TEXT                     -- sha256 hex of the request it created (schema 7)
    )""",
    "CREATE INDEX matches_by_status ON matches (status, created_at)",
    "CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL",
    "CREATE INDEX matches_by_creation ON matches (created_at, match_id)",
    """CREATE TABLE seats (
        match_id    TEXT NOT NULL REFERENCES matches (match_id),
        seat        INTEGER NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN ('open', 'bot')),
        bot         TEXT NOT NULL,
        player_name TEXT NOT NULL,
        token_hash  TEXT,                            -- sha256 hex of the seat token (NULL: free)
        joined_at   DOUBLE PRECISION,
        left_match  BOOLEAN NOT NULL,
        join_hash   TEXT,                            -- sha256 hex of the client_join_id (NULL: none; schema 6)
        PRIMARY KEY (match_id, seat)
    )""",
    "CREATE UNIQUE INDEX seats_by_token ON seats (token_hash) WHERE token_hash IS NOT NULL",
    """CREATE TABLE decks (
        match_id TEXT NOT NULL REFERENCES matches (match_id),
        deal     INTEGER NOT NULL,
        cards    TEXT[] NOT NULL,                    -- card codes, top card first (secret)
        salt     TEXT NOT NULL DEFAULT '',           -- commitment salt, 32 hex ('': none; schema 3)
        scheme   INTEGER NOT NULL DEFAULT 1,         -- commitment scheme (schema 4; 1: whole deck)
        PRIMARY KEY (match_id, deal)
    )""",
    """CREATE TABLE match_actions (
        match_id         TEXT NOT NULL REFERENCES matches (match_id),
        seq              INTEGER NOT NULL,
        seat             INTEGER NOT NULL,
        action           TEXT NOT NULL,
        by_whom          TEXT NOT NULL,
        client_action_id TEXT,                       -- NULL for bot and auto moves
        reason           TEXT NOT NULL,
        at               DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (match_id, seq)
    )""",
    """CREATE UNIQUE INDEX match_actions_by_client_id
        ON match_actions (match_id, seat, client_action_id) WHERE client_action_id IS NOT NULL""",
)
