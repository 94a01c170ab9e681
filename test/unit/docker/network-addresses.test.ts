// A container's network addresses as the driver reads them from the engine's inspect: a stopped
// container's empty IPAddress is no address (a connect to "" would reach this machine's loopback).
import { expect, test } from "bun:test";
import { networkAddressesOf } from "../../../src/docker/driver";

test("an empty IPAddress (a stopped or created container) is no address", () => {
  expect(networkAddressesOf({ "platform-ws-a": { IPAddress: "" }, bridge: { IPAddress: "172.17.0.5" }, other: {} })).toEqual({ bridge: "172.17.0.5" });
  expect(networkAddressesOf(undefined)).toEqual({});
});
