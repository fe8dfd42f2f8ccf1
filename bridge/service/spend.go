package service

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// spendRecord is the spend file: the UTC day and what each tenant spent on it.
type spendRecord struct {
	Day   string             `json:"day"`
	Spent map[string]float64 `json:"spent"`
}

// maxSpendFile bounds what is read of the spend file.
const maxSpendFile = 1 << 20

// loadLocked reads the spend file once, so a restarted service goes on counting the day; a.mu is
// held. A missing file is a day without spend; an unreadable one is reported once.
func (a *Admission) loadLocked() {
	if a.loaded || a.SpendFile == "" {
		return
	}
	a.loaded = true
	rec, err := readSpend(a.SpendFile)
	if err != nil {
		a.logf("spend file %s not read, the day's spend starts at zero: %v", a.SpendFile, err)
		return
	}
	if rec.Day != a.now().UTC().Format(time.DateOnly) {
		return
	}
	for name, usd := range rec.Spent {
		if usd > 0 {
			a.tenants[name] = &usage{day: rec.Day, spent: usd}
		}
	}
}

func readSpend(path string) (spendRecord, error) {
	var rec spendRecord
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return rec, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSpendFile))
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(b, &rec)
}

// saveLocked writes today's spend of every tenant to the spend file (0600, atomically); a.mu is
// held. A failure is logged: the limits still hold in memory.
func (a *Admission) saveLocked() {
	if a.SpendFile == "" {
		return
	}
	day := a.now().UTC().Format(time.DateOnly)
	rec := spendRecord{Day: day, Spent: map[string]float64{}}
	for name, u := range a.tenants {
		if u.day == day && u.spent > 0 {
			rec.Spent[name] = u.spent
		}
	}
	if err := writeSpend(a.SpendFile, rec); err != nil {
		a.logf("spend file %s not written: %v", a.SpendFile, err)
	}
}

func writeSpend(path string, rec spendRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".spend-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone after the rename; removes a leftover after a failure
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func (a *Admission) logf(format string, args ...any) {
	if a.Log != nil {
		a.Log.Warn(fmt.Sprintf(format, args...))
	}
}
