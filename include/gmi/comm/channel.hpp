#pragma once
// gmi::comm::channel: the experience channel from serving GMIs (producers) to trainer GMIs (consumers), in the
// paper's four stages. dispense: a rollout of T steps x E envs of fixed-size records is cut into packages of
// package_steps x package_envs records; pack: packages_per_slot same-shaped packages share one slot; migrate:
// each slot goes to the consumer with the fewest queued bytes (ties: round robin); batch: the consumer hands out
// training batches of a fixed number of packages. Back-pressure: every producer->consumer link has `slots`
// slots, and a producer with no free slot waits (bounded) for one: memory never grows.
// Payload is copied once on the producer side, straight into the consumer's memory (device, pinned or host,
// see payload_placement); a batch that lies inside one slot is handed out without a copy.
//
// The stages live in headers of their own; this one gives all of them.

#include <gmi/comm/channel_consumer.hpp>
#include <gmi/comm/channel_dispense.hpp>
#include <gmi/comm/channel_migrate.hpp>
#include <gmi/comm/channel_options.hpp>
#include <gmi/comm/channel_producer.hpp>
