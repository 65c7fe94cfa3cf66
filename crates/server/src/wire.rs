//! The wire types as `#[utoipa::path]` sees them. Each marker stands for the type of the
//! same name: its schema is a reference to that type's schemars name, and [`schema`] makes
//! the schema behind it (for the document, `openapi`). A type used in a body must be listed
//! here (a marker that is not does not compile in an annotation). Handlers import this
//! module; the document imports the handlers: the markers sit below both.

use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde_json::Value;
use std::borrow::Cow;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Ref, Schema};

macro_rules! markers {
    ($($name:ident = $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Stands for `", stringify!($ty), "` in `#[utoipa::path]`.")]
            pub struct $name;
            impl utoipa::PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    RefOr::Ref(Ref::from_schema_name(<$ty as JsonSchema>::schema_name()))
                }
            }
            impl utoipa::ToSchema for $name {
                fn name() -> Cow<'static, str> {
                    <$ty as JsonSchema>::schema_name()
                }
            }
        )*

        /// schemars' schema of the wire type a marker named `name` stands for (in
        /// practice a reference into the generator's definitions), or `None` when no
        /// marker has that name.
        pub(crate) fn schema(name: &str, g: &mut SchemaGenerator) -> Option<Value> {
            $(
                if name == <$ty as JsonSchema>::schema_name() {
                    return Some(g.subschema_for::<$ty>().to_value());
                }
            )*
            None
        }
    };
}

markers! {
    ErrorBody = protocol::ErrorBody,
    GuestRequest = protocol::GuestRequest,
    GuestResponse = protocol::GuestResponse,
    PlayerInfo = protocol::PlayerInfo,
    Credentials = protocol::Credentials,
    AccountInfo = protocol::AccountInfo,
    BotToken = protocol::BotToken,
    SignInResponse = protocol::SignInResponse,
    DeviceInfo = protocol::DeviceInfo,
    PublicPlayer = protocol::PublicPlayer,
    Session = protocol::Session,
    MatchRow = protocol::MatchRow,
    GameInfo = games::GameInfo,
    TableInfo = protocol::TableInfo,
    ServerMsg = protocol::ServerMsg,
    CreateTableRequest = protocol::CreateTableRequest,
    CreateTableResponse = protocol::CreateTableResponse,
    JoinRequest = protocol::JoinRequest,
    SeatBotRequest = protocol::SeatBotRequest,
    RoundFairness = protocol::RoundFairness,
    Replay = protocol::Replay,
    AnalysisStatus = protocol::AnalysisStatus,
    DealRecord = protocol::DealRecord,
    Leaderboard = protocol::Leaderboard,
    Records = protocol::Records,
    PlayerRating = protocol::PlayerRating,
    RatingPoint = protocol::RatingPoint,
    DailyBoard = protocol::DailyBoard,
    DailyRequest = protocol::DailyRequest,
    CreateTournamentRequest = protocol::CreateTournamentRequest,
    JoinTournamentRequest = protocol::JoinTournamentRequest,
    TournamentInfo = protocol::TournamentInfo,
    TournamentList = protocol::TournamentList,
}
