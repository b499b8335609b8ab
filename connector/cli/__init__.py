"""``pyq``: a Kafka-tool-like command line for pyq clusters (and any Kafka cluster).

::

    pyq cluster start [--brokers N] [--data-dir DIR]      a local controller + N brokers
    pyq topics create TOPIC [--partitions N] [--replication-factor N] [--config K=V]
    pyq topics list | describe [TOPIC] | delete TOPIC
    pyq topics alter TOPIC [--partitions N] [--config K=V] [--delete-config K]
    pyq configs describe | alter (--topic T | --broker N | --broker-defaults)
    pyq produce TOPIC [-H N=V] [-Z] [-l FILE] [-K SEP]     stdin (or FILE) lines -> records
    pyq consume TOPIC... [--regex P] [-o OFFSET] [-e] [-f FMT | -J]   records -> stdout,
                                                           following until Ctrl-C (kcat's flags)
    pyq offsets TOPIC [-p P] [--time MS|-1|-2]             the offsets for a time (kcat -Q)
    pyq lag --group G [--topic T]                          committed vs latest offsets

Every command talks to the cluster through pyq's own client (:mod:`connector.client`),
imported only when a command runs, so ``--help`` is instant. Exit codes: 0 success,
1 the command failed (one ``pyq ...: error: ...`` line on stderr), 2 bad usage (one line
naming the option, the value and what is allowed).

Modules, one concept each::

    main      the parser tree and the dispatch; maps errors to exit codes
    args      argparse with one-line usage errors, validated option types, client options
    errors    CommandError: an expected failure, shown as one line
    table     plain, aligned text tables
    output    --format text|json / -J: a table as text or one JSON document
    cluster   pyq cluster start (broker_sim's ``pyq-broker cluster``)
    topics    pyq topics create / list / describe / alter / delete
    configs   pyq configs describe / alter: topic and broker configs at runtime
    produce   pyq produce: stdin lines, optionally ``key<TAB>value``, become records
    consume   pyq consume: follow partitions from where -o says, with or without a group
    record_output  how consume prints a record: default lines, kcat's -f, -J JSON
    offsets   pyq offsets: each partition's offset for a time, latest or earliest
    lag       pyq lag: a group's committed offsets, the latest offsets, the lag, counters
    transactions  pyq transactions list / describe: what the transaction coordinators hold
    profile   the user's profile.toml: client options below the command line ($PYQ_BROKERS)
    completion  pyq completion bash|zsh: shell completion from the parser tree (argcomplete)
"""
