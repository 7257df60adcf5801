package redis

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Where the seat slots of a spread concert land. A slot's master follows from its hash tag, and a tag
// of a schedule id alone lands wherever CRC16 sends it: with 3 schedules on 3 masters, two schedules
// share a master, often the concert's own, two times in three. So at creation the concert places them
// (PlaceSeatSlots): each schedule, or each block of a schedule's seats where the masters outnumber the
// schedules, goes to the master with the least expected load so far, each master starting with the load
// of the concert's own slot and of the line shards it serves, and the slot's tag gets the first suffix
// "@<n>" whose slot that master serves. The placement is recorded with the concert
// in Postgres (ticketrush.Placement) and kept in its settings (cfg sched); restore writes the recorded
// one, and it is never recomputed for a concert that has one: a reshard or a failover later moves slots,
// never keys (docs/scaleout.md, "Placement").

// LineArriveWeight is the Redis time of a concert's own slot per join (line_arrive, in batches) against a
// fan's in their line shard (line_enter and its replica wait), as make capacity measures them on a
// cluster (about 4 µs against 25-60): where the line's shards go, the concert's master counts as
// carrying that share of them already.
const LineArriveWeight = 0.15

// ConcertSlotWeight is the Redis time of a concert's own slot per fan (line_arrive and line_admit: about
// 4 and 8 µs), against a schedule slot's per fan holding there (seat_take, hold_cancel: 72-79 µs in
// BenchmarkOneConcertSpreadOnCluster): over S schedules, the concert's slot weighs about 0.15·S
// schedules. LineWeight is the same for the whole line, shared by its shards: line_enter and line_pop
// (22 µs per fan) and the gate's steps of a hold and a cancel (gate_apply, on the fan's shard), which
// make capacity finds about as many calls as the seat's and of about their cost.
const (
	ConcertSlotWeight = 0.15
	LineWeight        = 1.0
)

// placementTries bounds the search for a tag suffix on a chosen master: a master serving a third of
// the slots is found within a few tries; one serving a sliver of them is given up on (the slot then
// stays where its plain tag lands).
const placementTries = 4096

// SeatSlot names a slot of one schedule's seats: the schedule id, then "#<b>" when the schedule's seats
// are kept in blocks (block b of them, a slot each: seatBlock says which seat is in which), then "@<n>"
// when the placement chose the tag's suffix n (see above). Its keys are tagged {c:<id>:s:<slot>}.
type SeatSlot string

// ScheduleID is the schedule whose seats the slot holds.
func (s SeatSlot) ScheduleID() string {
	if i := strings.IndexAny(string(s), "#@"); i >= 0 {
		return string(s)[:i]
	}
	return string(s)
}

// Block is which block of its schedule's seats the slot holds (0 for a schedule of one).
func (s SeatSlot) Block() int {
	_, rest, ok := strings.Cut(string(s), "#")
	if !ok {
		return 0
	}
	b, _, _ := strings.Cut(rest, "@")
	n, _ := strconv.Atoi(b)
	return n
}

// Slot is the seat slot that keeps seatID of scheduleID.
func (l Layout) Slot(scheduleID, seatID string) SeatSlot {
	return blocksBySchedule(l.Schedules).seat(scheduleID, seatID)
}

// Blocks is the seat slots of scheduleID, in block order.
func (l Layout) Blocks(scheduleID string) []SeatSlot {
	return blocksBySchedule(l.Schedules).of(scheduleID)
}

// seatBlocks is the seat slots of each schedule, in block order: a block is its place there, as a seat's
// (seatBlock) and a reservation id's (ticketrush.ReservationBlock) are.
type seatBlocks map[string][]SeatSlot

// blocksBySchedule groups slots by schedule, each schedule's in block order.
func blocksBySchedule(slots []SeatSlot) seatBlocks {
	out := seatBlocks{}
	for _, s := range slots {
		out[s.ScheduleID()] = append(out[s.ScheduleID()], s)
	}
	for _, b := range out {
		sort.SliceStable(b, func(i, j int) bool { return b[i].Block() < b[j].Block() })
	}
	return out
}

// of is the seat slots of scheduleID (one, the slot of its plain tag, for a schedule b does not name:
// its scripts then answer NOT_FOUND).
func (b seatBlocks) of(scheduleID string) []SeatSlot {
	if s, ok := b[scheduleID]; ok {
		return s
	}
	return []SeatSlot{SeatSlot(scheduleID)}
}

// seat is the seat slot that keeps seatID of scheduleID.
func (b seatBlocks) seat(scheduleID, seatID string) SeatSlot {
	s := b.of(scheduleID)
	return s[seatBlock(seatID, len(s))]
}

// reservation is the seat slot that keeps reservation id of scheduleID: the block its id names.
func (b seatBlocks) reservation(scheduleID, id string) SeatSlot {
	s := b.of(scheduleID)
	return s[ticketrush.ReservationBlock(id, len(s))]
}

// all is every seat slot of the schedules ids, in their order and each schedule's in block order.
func (b seatBlocks) all(ids []string) []SeatSlot {
	var out []SeatSlot
	for _, id := range ids {
		out = append(out, b.of(id)...)
	}
	return out
}

// seatBlock is the block, of blocks, that seatID is kept in: a stable hash of the seat id, so that a
// section's seats spread over every block.
func seatBlock(seatID string, blocks int) int {
	if blocks <= 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE([]byte("seat:"+seatID)) % uint32(blocks))
}

// seats is how many seats of one schedule of concert c its seat slot slot keeps (every seat of the
// schedule for a schedule of one block).
func (b seatBlocks) seats(c ticketrush.Concert, slot SeatSlot) int64 {
	s := b.of(slot.ScheduleID())
	if len(s) <= 1 {
		return int64(c.TotalSeats())
	}
	at := slices.Index(s, slot)
	var n int64
	for _, sec := range c.Sections {
		for i := 1; i <= sec.Seats; i++ {
			if seatBlock(ticketrush.SeatID(sec.Name, i), len(s)) == at {
				n++
			}
		}
	}
	return n
}

// ScheduleIDs is the schedules of the seat slots, each once, in their first slot's order.
func ScheduleIDs(slots []SeatSlot) []string {
	var out []string
	for _, s := range slots {
		if id := s.ScheduleID(); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// A placement (the cfg sched value, and the record's) is the seat slots, comma-separated, then, for a
// line whose shards were placed, "|" and the tag suffix of each shard (0: none), comma-separated.

// splitSchedules is the seat slots of placement raw.
func splitSchedules(raw string) []SeatSlot {
	raw, _, _ = strings.Cut(raw, "|")
	if raw == "" {
		return nil
	}
	parts := strings.Split(raw, ",")
	out := make([]SeatSlot, len(parts))
	for i, p := range parts {
		out[i] = SeatSlot(p)
	}
	return out
}

// splitShardAt is the tag suffix of each shard of the line of placement raw (nil: none placed); an
// entry that does not read as a suffix reads as none.
func splitShardAt(raw string) []int {
	_, line, ok := strings.Cut(raw, "|")
	if !ok || line == "" {
		return nil
	}
	parts := strings.Split(line, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}

func joinSlots(slots []SeatSlot) string {
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// formatPlacement is the placement of seat slots slots and line shards placed at at (nil: none).
func formatPlacement(slots []SeatSlot, at []int) string {
	out := joinSlots(slots)
	if len(at) == 0 {
		return out
	}
	parts := make([]string, len(at))
	for i, a := range at {
		parts[i] = strconv.Itoa(a)
	}
	return out + "|" + strings.Join(parts, ",")
}

// PlaceSeatSlots returns a new placement of concert c's seat slots, the cfg sched value: for a line of
// one shard each schedule's slot in the concert's own (SlotsTogether), and for a line over shards its
// schedule ids on a single Redis and on a Redis Cluster each schedule's seats in blocks slots placed on
// the masters (see above). blocks 0 is a new concert's placement: about a block a master, and the
// line's shards placed too (placeLineShards); a concert placed again (blocks 1) gets none, its line's
// shards keeping the plain tags they have.
func PlaceSeatSlots(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert, blocks int) (string, error) {
	if c.Queue.LineShards <= 1 {
		return joinSlots(SlotsTogether(k, c)), nil
	}
	slots := make([]SeatSlot, len(c.Schedules))
	for i, sc := range c.Schedules {
		slots[i] = SeatSlot(sc.ID)
	}
	if rdb.Mode() != rueidis.ClientModeCluster {
		return joinSlots(slots), nil
	}
	owners, err := slotOwners(ctx, rdb)
	if err != nil {
		return "", fmt.Errorf("place the seat slots of %s: %w", c.ID, err)
	}
	var at []int
	if blocks <= 0 {
		at = placeLineShards(owners, k, c.Queue.LineShards)
	}
	return formatPlacement(placeSeatSlots(owners, k.Placed(at), c, blocks), at), nil
}

// placeLineShards is the tag suffix of each of a new concert's shards shards on the masters of owners
// (each slot's master): each shard on the master with the fewest so far, the concert's own master
// counted as carrying LineArriveWeight of the shards already (its slot takes every join's arrival seq);
// nil on one master. A shard whose master no suffix reaches within placementTries keeps its plain tag.
func placeLineShards(owners []string, k ConcertKeys, shards int) []int {
	l := newMasterLoads(owners)
	if len(l.masters) < 2 || shards < 2 {
		return nil
	}
	l.load[owners[slot(k.Cfg())]] = LineArriveWeight * float64(shards)
	at := make([]int, shards)
	for n := range shards {
		at[n] = l.place(func(try int) int { return slot(k.shardAt(n, try).Places()) }, 1)
	}
	return at
}

// masterLoads is every master's expected load so far, in the placement's unit, over the masters of
// owners (each slot's master, CLUSTER SLOTS) in a stable order.
type masterLoads struct {
	owners, masters []string
	load            map[string]float64
}

func newMasterLoads(owners []string) *masterLoads {
	l := &masterLoads{owners: owners, load: map[string]float64{}}
	for _, m := range owners {
		if _, seen := l.load[m]; m != "" && !seen {
			l.load[m] = 0
			l.masters = append(l.masters, m)
		}
	}
	sort.Strings(l.masters)
	return l
}

// place is the first tag suffix (0: none) within placementTries whose slot, slotOf(suffix), the master
// with the least load so far serves (0 when none does), and adds weight to the master of the slot it
// names.
func (l *masterLoads) place(slotOf func(suffix int) int, weight float64) int {
	target := ""
	for _, m := range l.masters {
		if target == "" || l.load[m] < l.load[target] {
			target = m
		}
	}
	at := 0
	for try := 0; try < placementTries; try++ {
		if l.owners[slotOf(try)] == target {
			at = try
			break
		}
	}
	l.load[l.owners[slotOf(at)]] += weight
	return at
}

// togetherTries bounds the search for a tag suffix whose slot is the concert's: each try lands there
// one time in 16384, so 2^20 tries miss it about once in e^64.
const togetherTries = 1 << 20

// SlotsTogether is the seat slots of c's schedules in the concert's own slot: each schedule's tag gets the
// first suffix "@<n>" whose slot is the concert's, so that one script call reaches the line, the gate
// and the seats (a line of one shard keeps everything there). It is a function of the ids alone: the
// same on every machine, and what a layout migration gives a concert whose seats were in its keys.
func SlotsTogether(k ConcertKeys, c ticketrush.Concert) []SeatSlot {
	own := slot(k.Cfg())
	slots := make([]SeatSlot, len(c.Schedules))
	for i, sc := range c.Schedules {
		slots[i] = SeatSlot(sc.ID)
		for n := 1; n < togetherTries && slot(k.Schedule(slots[i]).Seats()) != own; n++ {
			slots[i] = SeatSlot(sc.ID + "@" + strconv.Itoa(n))
		}
	}
	return slots
}

// placeSeatSlots places the seat slots of c's schedules (a concert whose line is spread) on the masters
// of owners (each slot's master, CLUSTER SLOTS): each schedule's seats in blocks slots (0: about a slot a
// master over the schedules, at most ticketrush.MaxSeatBlocks a schedule, so that one date's holds
// spread like its joins and a concert of many dates keeps a slot a date), each block on the master with
// the least expected load so far.
func placeSeatSlots(owners []string, k ConcertKeys, c ticketrush.Concert, blocks int) []SeatSlot {
	l := newMasterLoads(owners) // its loads in schedules
	if blocks <= 0 {
		// about a seat slot a master over the concert's schedules
		blocks = max(1, min(len(l.masters)/max(1, len(c.Schedules)), ticketrush.MaxSeatBlocks))
	}
	s := float64(len(c.Schedules))
	l.load[owners[slot(k.Cfg())]] += ConcertSlotWeight * s
	for n := range c.Queue.LineShards {
		l.load[owners[slot(k.Shard(n).Places())]] += LineWeight * s / float64(c.Queue.LineShards)
	}
	var slots []SeatSlot
	for _, sc := range c.Schedules {
		for b := range blocks {
			name := sc.ID
			if blocks > 1 {
				name += "#" + strconv.Itoa(b)
			}
			tag := func(suffix int) SeatSlot {
				if suffix == 0 {
					return SeatSlot(name)
				}
				return SeatSlot(name + "@" + strconv.Itoa(suffix))
			}
			at := l.place(func(suffix int) int { return slot(k.Schedule(tag(suffix)).Seats()) }, 1/float64(blocks))
			slots = append(slots, tag(at))
		}
	}
	return slots
}

// SeatPlacement is the placement to record for concert c, created before placements were recorded (a
// cfg sched value): the seat slots its settings in Redis name when Redis holds c (the slots every running
// process reads, none when its seats live in its own slot), else a new placement of one block a
// schedule (PlaceSeatSlots): the reservations such a concert has, restored later, were made before
// seats went into blocks, and their ids name none.
func SeatPlacement(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert) (string, error) {
	return seatPlacement(ctx, rdb, k, c, 1)
}

// seatPlacement is SeatPlacement, a new placement in blocks slots a schedule (0: one a master).
func seatPlacement(ctx context.Context, rdb rueidis.Client, k ConcertKeys, c ticketrush.Concert, blocks int) (string, error) {
	v, err := rdb.Do(ctx, rdb.B().Hmget().Key(k.Cfg()).Field("cap", "sched").Build()).ToArray()
	if err != nil {
		return "", fmt.Errorf("placement of %s: %w", c.ID, unavailable(err))
	}
	if !v[0].IsNil() {
		raw, _ := v[1].ToString()
		kept := ScheduleIDs(splitSchedules(raw))
		same := kept != nil && len(kept) == len(c.Schedules)
		for i := 0; same && i < len(kept); i++ {
			same = kept[i] == c.Schedules[i].ID
		}
		if same {
			return raw, nil
		}
	}
	return PlaceSeatSlots(ctx, rdb, k, c, blocks)
}

// slotOwners reads CLUSTER SLOTS: the id of the master serving each of the 16384 slots ("" none).
func slotOwners(ctx context.Context, rdb rueidis.Client) ([]string, error) {
	ranges, err := rdb.Do(ctx, rdb.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, unavailable(err)
	}
	owners := make([]string, 16384)
	for _, r := range ranges {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: a range of %d fields (%v)", len(f), err)
		}
		lo, lerr := f[0].AsInt64()
		hi, herr := f[1].AsInt64()
		node, nerr := f[2].ToArray()
		if lerr != nil || herr != nil || nerr != nil || len(node) < 3 || lo < 0 || hi >= 16384 || lo > hi {
			return nil, fmt.Errorf("CLUSTER SLOTS: a range that does not read: %v", r)
		}
		id, err := node[2].ToString()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SLOTS: a master without an id: %w", err)
		}
		for s := lo; s <= hi; s++ {
			owners[s] = id
		}
	}
	return owners, nil
}

// crc16 is Redis Cluster's CRC16 (XMODEM).
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slot is the Redis Cluster hash slot of key, hash tags included.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) % 16384)
}
