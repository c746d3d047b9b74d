/* version.h - the release this tree builds: the node advertises it in
 * ZooKeeper (nodes/<id>) and /status, the CLI and the sink print it with
 * --version.  Bumped when a release is tagged (docs/upgrades.md); between
 * releases it carries "-dev". */
#ifndef PALISADE_VERSION_H
#define PALISADE_VERSION_H

#define PALISADE_VERSION "0.4.0-dev"

#endif
